import RecordModel

extension RecordClient {
    /// The record name of a zone's share, as CloudKit names it.
    public static let zoneShareRecordName = "cloudkit.zoneshare"

    /// Saves the zone's share record with `participants` and `title` (an update of `existing`, the
    /// share as last read, when there is one; a creation otherwise) and answers the saved share as
    /// the server does (`url`, `shortGUID`). A refusal is thrown as the server's error.
    public func saveZoneShare(zone: ZoneID, title: String, participants: [JSONValue], existing: JSONValue?) async throws -> JSONValue {
        var record: [String: JSONValue] = [
            "recordName": .string(Self.zoneShareRecordName), "recordType": "cloudkit.share",
            "fields": ["cloudkit.title": ["value": .string(title)]],
            "publicPermission": "NONE", "participants": .array(participants),
        ]
        var operation: [String: JSONValue] = ["operationType": "create"]
        if let tag = existing?["recordChangeTag"]?.stringValue {
            record["recordChangeTag"] = .string(tag)
            operation["operationType"] = "update"
        }
        operation["record"] = .object(record)
        let answer = try await call("records/modify", ["zoneID": zone.json, "operations": [.object(operation)]], database: "private")
        guard let saved = answer["records"]?.arrayValue?.first else { throw RecordClientError.invalidResponse("the server did not answer the share") }
        if let code = saved["serverErrorCode"]?.stringValue {
            let reason = saved["reason"]?.stringValue ?? ""
            throw RecordClientError.server(ServerError(ServerErrorCode(rawValue: code) ?? .internalError, "the server refused the share: \(reason)"),
                                           httpStatus: 200)
        }
        return saved
    }
}
