import RecordModel

extension RecordClient {
    /// The most operations one `records/modify` request may carry.
    public static let maximumOperationsPerRequest = 400

    /// `records/modify`: applies `operations` in order and returns one result per operation.
    /// With `atomic: false` the server applies what succeeds and reports the rest per item.
    public func modifyRecords(zoneID: ZoneID, operations: [RecordOperation], atomic: Bool = false) async throws -> [RecordOperationResult] {
        let body: JSONValue = [
            "zoneID": zoneID.json, "atomic": .bool(atomic),
            "operations": .array(operations.map(\.json)),
        ]
        let answer = try await post("records/modify", body)
        let entries = try answer.requiredArray("records", in: "records/modify")
        guard entries.count == operations.count else {
            throw RecordClientError.invalidResponse("records/modify answered \(entries.count) entries for \(operations.count) operations")
        }
        return try entries.map(RecordOperationResult.init(json:))
    }

    /// `records/lookup`: the current server copy of each named record, or its error (`NOT_FOUND`).
    public func lookupRecords(zoneID: ZoneID, recordNames: [String]) async throws -> [RecordOperationResult] {
        let body: JSONValue = [
            "zoneID": zoneID.json,
            "records": .array(recordNames.map { ["recordName": .string($0)] }),
        ]
        let answer = try await post("records/lookup", body)
        return try answer.requiredArray("records", in: "records/lookup").map(RecordOperationResult.init(json:))
    }
}
