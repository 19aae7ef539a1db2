import RecordModel

extension RecordClient {
    /// One page of `records/query`: the records and the marker of the next page (nil at the end).
    public struct QueryPage: Sendable {
        public var records: [Record]
        public var continuationMarker: String?
    }

    /// `records/query` for every record of `recordType` in `zoneID`, one page.
    public func queryRecords(zoneID: ZoneID, recordType: String, resultsLimit: Int = 200, continuationMarker: String? = nil) async throws
        -> QueryPage
    {
        var body: [String: JSONValue] = [
            "zoneID": zoneID.json, "resultsLimit": .int(Int64(resultsLimit)), "query": ["recordType": .string(recordType)],
        ]
        if let continuationMarker { body["continuationMarker"] = .string(continuationMarker) }
        let answer = try await post("records/query", .object(body))
        let records = try answer.requiredArray("records", in: "records/query").map { entry -> Record in
            do {
                return try Record(responseJSON: entry)
            } catch {
                throw RecordClientError.invalidResponse("records/query entry that is not a record: \(error)")
            }
        }
        return QueryPage(records: records, continuationMarker: answer["continuationMarker"]?.stringValue)
    }

    /// Every record of `recordType` in `zoneID`, following continuation markers (at most `maximumPages`).
    public func queryAllRecords(zoneID: ZoneID, recordType: String, maximumPages: Int = 100) async throws -> [Record] {
        var records: [Record] = []
        var marker: String?
        for _ in 0..<maximumPages {
            let page = try await queryRecords(zoneID: zoneID, recordType: recordType, continuationMarker: marker)
            records += page.records
            guard let next = page.continuationMarker else { return records }
            marker = next
        }
        return records
    }
}
