import RecordClient
import RecordModel

/// What the sync engine needs from the server. `RecordClient` is the real one; tests use an
/// in-memory double.
public protocol CloudDatabase: Sendable {
    func currentUserRecordName() async throws -> String
    func createZone(_ zoneID: ZoneID) async throws
    func deleteZone(_ zoneID: ZoneID) async throws
    /// The zones of the private database.
    func listZones() async throws -> [ZoneID]
    /// The same server and user on the shared database (zones others share with the user).
    func sharedScope() -> any CloudDatabase
    func modifyRecords(zoneID: ZoneID, operations: [RecordOperation], atomic: Bool) async throws -> [RecordOperationResult]
    func lookupRecords(zoneID: ZoneID, recordNames: [String]) async throws -> [RecordOperationResult]
    func fetchZoneChanges(zoneID: ZoneID, syncToken: String?, resultsLimit: Int?) async throws -> ZoneChangesPage
    /// The same page, received but not decoded yet: what the engine reads ahead with.
    func fetchZoneChangesAnswer(zoneID: ZoneID, syncToken: String?, resultsLimit: Int?) async throws -> ZoneChangesAnswer
    func saveSubscription(_ subscription: Subscription) async throws
    func createNotificationChannel() async throws -> NotificationChannel
    func pollNotifications(_ channel: NotificationChannel, since cursor: String?, timeout: Int) async throws -> NotificationPage
    /// In the shared database: the share of a zone shared with the user, as the user takes part
    /// in it (its title and whether the user may only read); nil when it cannot be read.
    func shareParticipation(zoneID: ZoneID) async throws -> ShareParticipation?
    /// Uploads a picture (the file at `path`, `size` bytes) for one field of one record; the
    /// `singleFile` to save it with. `progress` is told the bytes sent so far.
    func uploadAsset(zoneID: ZoneID, recordName: String, recordType: String, fieldName: String, file path: String,
                     size: Int64, progress: (@Sendable (Int64) -> Void)?) async throws -> JSONValue
    /// `length` bytes from `offset` of the asset at a record's `downloadURL`.
    func downloadAsset(url: String, offset: Int64, length: Int) async throws -> [UInt8]
}

/// How the user takes part in a shared zone (from the share's `currentUserParticipant`).
public struct ShareParticipation: Sendable, Equatable {
    public var title: String?
    public var readOnly: Bool
}

extension RecordClient: CloudDatabase {
    public func sharedScope() -> any CloudDatabase { inDatabase("shared") }

    public func shareParticipation(zoneID: ZoneID) async throws -> ShareParticipation? {
        let answer = try await call("records/lookup", ["zoneID": zoneID.json, "records": [["recordName": "cloudkit.zoneshare"]]],
                                    database: "shared")
        guard let share = answer["records"]?.arrayValue?.first, share["serverErrorCode"] == nil,
              let permission = share["currentUserParticipant"]?["permission"]?.stringValue
        else { return nil }
        return ShareParticipation(title: share["fields"]?["cloudkit.title"]?["value"]?.stringValue, readOnly: permission == "READ_ONLY")
    }
}

extension CloudDatabase {
    // Doubles that hold one zone need not implement the zone listing.
    public func deleteZone(_ zoneID: ZoneID) async throws {}
    public func listZones() async throws -> [ZoneID] { [] }
    public func sharedScope() -> any CloudDatabase { self }
    /// Doubles answer decoded pages, whose next token is known only once they are read.
    public func fetchZoneChangesAnswer(zoneID: ZoneID, syncToken: String?, resultsLimit: Int?) async throws -> ZoneChangesAnswer {
        let page = try await fetchZoneChanges(zoneID: zoneID, syncToken: syncToken, resultsLimit: resultsLimit)
        return ZoneChangesAnswer(nextSyncToken: nil) { page }
    }
    public func shareParticipation(zoneID: ZoneID) async throws -> ShareParticipation? { nil }
    public func uploadAsset(zoneID: ZoneID, recordName: String, recordType: String, fieldName: String, file path: String,
                            size: Int64, progress: (@Sendable (Int64) -> Void)?) async throws -> JSONValue
    {
        throw SyncError("this server connection does not move pictures")
    }
    public func downloadAsset(url: String, offset: Int64, length: Int) async throws -> [UInt8] {
        throw SyncError("this server connection does not move pictures")
    }
}
