import RecordModel

/// The server's truth, behind one protocol so another backend (PostgreSQL) can come later without
/// touching the routes. Every method is one transaction; each may block, so async callers run them
/// off their event loop. Errors are `ServerError`s unless the backend itself failed.
public protocol RecordStorage: AnyObject, Sendable {
    // Users and credentials.
    func createUser(name: String) throws -> (user: User, token: String)
    func issueToken(userName: String) throws -> (user: User, token: String)
    func listUsers() throws -> [User]
    func createAPIToken() throws -> String
    func authenticate(bearerToken: String) throws -> User?
    func authenticate(apiToken: String, webAuthToken: String) throws -> User?

    // Zones.
    func listZones(_ scope: DatabaseScope) throws -> [ZoneInfo]
    func lookupZone(_ scope: DatabaseScope, zoneName: String) throws -> ZoneInfo
    func createZone(_ scope: DatabaseScope, zoneName: String) throws -> ZoneInfo
    func deleteZone(_ scope: DatabaseScope, zoneName: String) throws

    // Records.
    func modifyRecords(_ scope: DatabaseScope, zone: ZoneID, operations: [RecordOperation], atomic: Bool,
                       deviceID: String?) throws -> [RecordOperationResult]
    func lookupRecords(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String]) throws -> [Result<StoredRecord, ServerError>]
    func queryRecords(_ scope: DatabaseScope, zone: ZoneID, query: RecordQuery, resultsLimit: Int,
                      continuationMarker: String?) throws -> QueryPage

    // Change feeds.
    func zoneChanges(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                     recordTypes: Set<String>?) throws -> ZoneChangesPage
    func databaseChanges(_ scope: DatabaseScope, syncToken: String?, resultsLimit: Int) throws -> DatabaseChangesPage

    // Subscriptions and notifications.
    func modifySubscriptions(_ scope: DatabaseScope, operations: [SubscriptionOperation]) throws -> [Result<Subscription?, ServerError>]
    func listSubscriptions(_ scope: DatabaseScope) throws -> [Subscription]
    func createPushToken(_ scope: DatabaseScope, apnsEnvironment: String) throws -> PushToken
    /// The caller's token: `NOT_FOUND` if unknown, `ACCESS_DENIED` if another user's.
    func pushToken(_ scope: DatabaseScope, token: String) throws -> PushToken
    /// Notifications of a database after `cursor`, oldest first.
    func notifications(databaseID: Int64, after cursor: Int64, limit: Int) throws -> [StoredNotification]
    /// Sets the callback told, after each commit, which databases it changed.
    func setCommitObserver(_ observer: @escaping @Sendable (Set<Int64>) -> Void)
    /// Removes notifications older than the given age.
    func purgeNotifications(olderThanMilliseconds: Int64) throws -> Int

    /// Totals for monitoring.
    func statistics() throws -> StoreStatistics

    /// Removes tombstones older than the retention period; returns how many were removed.
    func purgeTombstones(olderThanMilliseconds: Int64) throws -> Int
    /// Flushes and closes (on shutdown).
    func close()
}
