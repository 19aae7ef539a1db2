import Dispatch
import RecordModel

/// One entry of a change feed: a record in its latest state, or a tombstone.
public enum RecordChange: Sendable, Equatable {
    case saved(Record)
    /// A deleted record; the type is given when the server knows it.
    case deleted(recordName: String, recordType: String?)

    public var recordName: String {
        switch self {
        case .saved(let record): return record.recordName
        case .deleted(let name, _): return name
        }
    }
}

/// One page of `changes/zone`.
public struct ZoneChangesPage: Sendable, Equatable {
    public var changes: [RecordChange]
    /// The token to resume from after this page.
    public var syncToken: String
    /// True while the server has more changes after this page.
    public var moreComing: Bool
    /// Seconds spent waiting for the answer, and parsing it into records: where a sync's time
    /// goes (zero for pages not read over HTTP).
    public var fetchSeconds: Double = 0
    public var decodeSeconds: Double = 0

    public init(changes: [RecordChange], syncToken: String, moreComing: Bool) {
        self.changes = changes
        self.syncToken = syncToken
        self.moreComing = moreComing
    }

    /// Pages are equal by content; how long one took to read is not part of it.
    public static func == (left: ZoneChangesPage, right: ZoneChangesPage) -> Bool {
        left.changes == right.changes && left.syncToken == right.syncToken && left.moreComing == right.moreComing
    }
}

extension RecordClient {
    /// `changes/zone` for one zone: the changes after `syncToken` (from the beginning when nil).
    /// A per-zone error (`ZONE_NOT_FOUND`, `CHANGE_TOKEN_EXPIRED`, …) is thrown as `.server`.
    public func fetchZoneChanges(zoneID: ZoneID, syncToken: String?, resultsLimit: Int? = nil) async throws -> ZoneChangesPage {
        var zone: [String: JSONValue] = ["zoneID": zoneID.json]
        if let syncToken { zone["syncToken"] = .string(syncToken) }
        var body: [String: JSONValue] = ["zones": [.object(zone)]]
        if let resultsLimit { body["resultsLimit"] = .int(Int64(resultsLimit)) }
        let url = endpoint.databaseURL("changes/zone", database: database)
        let started = DispatchTime.now().uptimeNanoseconds
        let response = try await send(method: "POST", url: url, body: .object(body))
        let received = DispatchTime.now().uptimeNanoseconds
        let answer = try Self.decode(response, url: url)
        guard let entry = try answer.requiredArray("zones", in: "changes/zone").first else {
            throw RecordClientError.invalidResponse("changes/zone answered no zone")
        }
        if let error = ServerError(json: entry) {
            throw RecordClientError.server(error, httpStatus: error.code.httpStatus)
        }
        guard let token = entry["syncToken"]?.stringValue else {
            throw RecordClientError.invalidResponse("changes/zone answer without a syncToken")
        }
        let changes: [RecordChange] = try (entry["records"]?.arrayValue ?? []).compactMap { item in
            // A shared zone's share record (`cloudkit.share`) is the server's, not zone data;
            // the sharing commands read it directly.
            if item["recordType"]?.stringValue == "cloudkit.share" || item["recordName"]?.stringValue == "cloudkit.zoneshare" {
                return nil
            }
            if item["deleted"]?.boolValue == true {
                guard let name = item["recordName"]?.stringValue else {
                    throw RecordClientError.invalidResponse("a tombstone without a recordName")
                }
                return .deleted(recordName: name, recordType: item["recordType"]?.stringValue)
            }
            do {
                return .saved(try Record(responseJSON: item))
            } catch {
                throw RecordClientError.invalidResponse("changes/zone entry that is not a record: \(error)")
            }
        }
        var page = ZoneChangesPage(changes: changes, syncToken: token, moreComing: entry["moreComing"]?.boolValue ?? false)
        page.fetchSeconds = Double(received - started) / 1e9
        page.decodeSeconds = Double(DispatchTime.now().uptimeNanoseconds - received) / 1e9
        return page
    }
}
