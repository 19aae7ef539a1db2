import Dispatch
import Foundation
import RecordModel

/// One entry of a change feed: a record in its latest state, or a tombstone.
public enum RecordChange: Sendable, Equatable {
    case saved(Record)
    /// A deleted record; the type is given when the server knows it, and `deletedBy` (the
    /// deleter's user record name) when the server's tombstone says who deleted.
    case deleted(recordName: String, recordType: String?, deletedBy: String? = nil)

    public var recordName: String {
        switch self {
        case .saved(let record): return record.recordName
        case .deleted(let name, _, _): return name
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
    /// Each saved record's dictionary as the server wrote it, by record name, when read over
    /// HTTP: a client that keeps a server copy stores these bytes instead of serializing again.
    public var serverJSON: [String: [UInt8]] = [:]

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

/// A `changes/zone` answer received and not decoded yet. The token of the page after it is
/// read at once, so that page can be asked for while this one is decoded.
public struct ZoneChangesAnswer: Sendable {
    /// The token to fetch the next page with when the answer says more is coming; nil when no
    /// more is coming or it cannot be told without decoding.
    public let nextSyncToken: String?
    private let decodePage: @Sendable () throws -> ZoneChangesPage

    public init(nextSyncToken: String?, decode: @escaping @Sendable () throws -> ZoneChangesPage) {
        self.nextSyncToken = nextSyncToken
        decodePage = decode
    }

    /// The page, or the error the answer carries (thrown as `fetchZoneChanges` throws it).
    public func decode() throws -> ZoneChangesPage { try decodePage() }
}

extension RecordClient {
    /// `changes/zone` for one zone: the changes after `syncToken` (from the beginning when nil).
    /// A per-zone error (`ZONE_NOT_FOUND`, `CHANGE_TOKEN_EXPIRED`, …) is thrown as `.server`.
    public func fetchZoneChanges(zoneID: ZoneID, syncToken: String?, resultsLimit: Int? = nil) async throws -> ZoneChangesPage {
        try await fetchZoneChangesAnswer(zoneID: zoneID, syncToken: syncToken, resultsLimit: resultsLimit).decode()
    }

    /// `changes/zone` for one zone, received but not decoded: see `ZoneChangesAnswer`.
    public func fetchZoneChangesAnswer(zoneID: ZoneID, syncToken: String?, resultsLimit: Int?) async throws -> ZoneChangesAnswer {
        var zone: [String: JSONValue] = ["zoneID": zoneID.json]
        if let syncToken { zone["syncToken"] = .string(syncToken) }
        var body: [String: JSONValue] = ["zones": [.object(zone)]]
        if let resultsLimit { body["resultsLimit"] = .int(Int64(resultsLimit)) }
        let url = endpoint.databaseURL("changes/zone", database: database)
        let started = DispatchTime.now().uptimeNanoseconds
        let response = try await send(method: "POST", url: url, body: .object(body))
        let received = DispatchTime.now().uptimeNanoseconds
        let next = (200..<300).contains(response.status) ? Self.nextSyncToken(in: response.body) : nil
        return ZoneChangesAnswer(nextSyncToken: next) {
            var page = try Self.decodeZoneChanges(response, url: url)
            page.fetchSeconds = Double(received - started) / 1e9
            return page
        }
    }

    static func decodeZoneChanges(_ response: HTTPResponse, url: URL) throws -> ZoneChangesPage {
        let decodeStarted = DispatchTime.now().uptimeNanoseconds
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
        let items = entry["records"]?.arrayValue ?? []
        let slices = Self.firstZoneRecordSlices(in: response.body).flatMap { $0.count == items.count ? $0 : nil }
        var serverJSON: [String: [UInt8]] = [:]
        serverJSON.reserveCapacity(items.count)
        let changes: [RecordChange] = try items.enumerated().compactMap { index, item in
            // A shared zone's share record (`cloudkit.share`) is the server's, not zone data;
            // the sharing commands read it directly.
            if item["recordType"]?.stringValue == "cloudkit.share" || item["recordName"]?.stringValue == "cloudkit.zoneshare" {
                return nil
            }
            if item["deleted"]?.boolValue == true {
                guard let name = item["recordName"]?.stringValue else {
                    throw RecordClientError.invalidResponse("a tombstone without a recordName")
                }
                // The deletion's stamp, where the server gives one: who deleted.
                let deleter = item["modified"]?["userRecordName"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
                return .deleted(recordName: name, recordType: item["recordType"]?.stringValue, deletedBy: deleter)
            }
            do {
                let record = try Record(responseJSON: item)
                if let slices { serverJSON[record.recordName] = Array(response.body[slices[index]]) }
                return .saved(record)
            } catch {
                throw RecordClientError.invalidResponse("changes/zone entry that is not a record: \(error)")
            }
        }
        var page = ZoneChangesPage(changes: changes, syncToken: token, moreComing: entry["moreComing"]?.boolValue ?? false)
        page.serverJSON = serverJSON
        page.decodeSeconds = Double(DispatchTime.now().uptimeNanoseconds - decodeStarted) / 1e9
        return page
    }

    /// Where each entry of the first zone's `records` lies in a `changes/zone` answer.
    static func firstZoneRecordSlices(in body: [UInt8]) -> [Range<Int>]? {
        body.withUnsafeBufferPointer { buffer in
            let slices = JSONSlices(buffer)
            return slices.firstZoneMemberStart("records").flatMap { slices.elements(ofArrayAt: $0) }
        }
    }

    /// The first zone's `syncToken` in a `changes/zone` answer whose `moreComing` is true; nil
    /// otherwise, or when the token is not a plain string.
    static func nextSyncToken(in body: [UInt8]) -> String? {
        body.withUnsafeBufferPointer { buffer in
            let slices = JSONSlices(buffer)
            guard let more = slices.firstZoneMemberStart("moreComing"), slices.isTrue(at: more),
                  let token = slices.firstZoneMemberStart("syncToken")
            else { return nil }
            return slices.plainString(at: token)
        }
    }
}
