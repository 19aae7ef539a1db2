import Foundation
import NIOCore
import RecordModel

/// The server's truth, behind one async protocol that the store over the engine (`EngineStore`)
/// implements on either backend (`SQLiteStorage`, `PostgresRecordStore`), so the routes, the push
/// hub and the tests never know which backend runs. Every method is one transaction. Errors are
/// `ServerError`s unless the backend itself failed.
package protocol RecordStorage: AnyObject, Sendable {
    // Users and credentials.
    /// `email` is how sharing finds the user (`public/users/discover`, invitations by email);
    /// `tokenExpiresAt` is when its first token stops working (nil: never).
    func createUser(name: String, email: String?, tokenExpiresAt: Int64?) async throws -> (user: User, token: String)
    func issueToken(userName: String, expiresAt: Int64?) async throws -> (user: User, token: String)
    func listUsers() async throws -> [User]
    /// The administration of users (`scorebookd user …`): see `UserSummary`, `UserDeletion`.
    func userSummaries() async throws -> [UserSummary]
    func editUser(name: String, email: String) async throws -> UserSummary
    func deleteUser(name: String) async throws -> UserDeletion
    func revokeTokens(userName: String, token: String?) async throws -> (user: User, revoked: Int)
    /// Web sign-in: stores the user's password hash (made by the caller, see `PasswordCredential`).
    func setPasswordHash(userName: String, hash: String) async throws -> User
    /// The user whose name, or else email, is `login`, with its password hash; nil when none.
    func passwordCredential(login: String) async throws -> PasswordCredential?
    /// The store's invariants that do not hold (empty when sound), for `scorebookd check`.
    func checkIntegrity() async throws -> [String]
    func createAPIToken() async throws -> String
    func authenticate(bearerToken: String) async throws -> User?
    func authenticate(apiToken: String, webAuthToken: String) async throws -> User?
    /// Whether `apiToken` is a live API token (a public reader may send nothing else).
    func isValidAPIToken(_ apiToken: String) async throws -> Bool
    /// Registers a server-to-server key from its PEM and returns its key id.
    func addServerKey(pem: String, name: String?) async throws -> String
    /// The key with this id and the user it acts as, or nil.
    func serverKey(keyID: String) async throws -> ServerKey?

    // Zones.
    func listZones(_ scope: DatabaseScope) async throws -> [ZoneInfo]
    func lookupZone(_ scope: DatabaseScope, zoneName: String) async throws -> ZoneInfo
    func createZone(_ scope: DatabaseScope, zoneName: String) async throws -> ZoneInfo
    func deleteZone(_ scope: DatabaseScope, zoneName: String) async throws

    // Records.
    func modifyRecords(_ scope: DatabaseScope, zone: ZoneID, operations: [RecordOperation], atomic: Bool,
                       deviceID: String?) async throws -> [RecordOperationResult]
    func lookupRecords(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String]) async throws -> [Result<StoredRecord, ServerError>]
    func queryRecords(_ scope: DatabaseScope, zone: ZoneID, query: RecordQuery, resultsLimit: Int,
                      continuationMarker: String?) async throws -> QueryPage

    // Change feeds.
    func zoneChanges(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                     recordTypes: Set<String>?) async throws -> ZoneChangesPage
    func databaseChanges(_ scope: DatabaseScope, syncToken: String?, resultsLimit: Int) async throws -> DatabaseChangesPage
    /// `zoneChanges` and `lookupRecords` with the records as JSON (`RecordJSONWriter`), which a
    /// backend writes from its rows as it reads them.
    func zoneChangesJSON(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                         recordTypes: Set<String>?, options: RecordJSONOptions) async throws -> SerializedRecordPage
    func lookupRecordsJSON(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String], options: RecordJSONOptions) async throws -> SerializedRecords

    // Subscriptions and notifications.
    func modifySubscriptions(_ scope: DatabaseScope, operations: [SubscriptionOperation]) async throws
        -> [Result<Subscription?, ServerError>]
    func listSubscriptions(_ scope: DatabaseScope) async throws -> [Subscription]
    /// `authTokenHash`: the hash of the user token that asked, which the channel's courier URL lives with.
    func createPushToken(_ scope: DatabaseScope, apnsEnvironment: String, authTokenHash: String?) async throws -> PushToken
    /// The caller's token: `NOT_FOUND` if unknown, `ACCESS_DENIED` if another user's.
    func pushToken(_ scope: DatabaseScope, token: String) async throws -> PushToken
    /// A channel of `container` and `environment` found by its token alone (its courier URL is a
    /// capability); nil when unknown or when its user has no live token left (revoked, deleted).
    func courierChannel(token: String, container: String, environment: Environment) async throws -> PushToken?
    /// Records that the courier's polls without a cursor were answered up to `cursor`
    /// (`PushToken.deliveredCursor`); a position already past it stays.
    func advanceCourierPosition(token: String, to cursor: Int64) async throws
    /// Notifications of a database after `cursor`, oldest first.
    func notifications(databaseID: Int64, after cursor: Int64, limit: Int) async throws -> [StoredNotification]
    /// Answers when the store can serve a read, else throws (`TRY_AGAIN_LATER` past the deadline):
    /// what `GET /ready` asks.
    func checkReady() async throws
    /// Sets the callback told, after each commit, which databases it changed (the empty set:
    /// any database may have changed unannounced, as after a lost connection to the database).
    func setCommitObserver(_ observer: @escaping @Sendable (Set<Int64>) -> Void)
    /// Removes notifications older than the given age.
    func purgeNotifications(olderThanMilliseconds: Int64) async throws -> Int

    /// Totals for monitoring.
    func statistics() async throws -> StoreStatistics

    /// The store's transaction scripts, for what is written once over both backends and needs no
    /// backend method of its own (webhooks: `StoreEngine+Webhooks`).
    var engine: StoreEngine { get }

    /// Removes tombstones older than the retention period; returns how many were removed.
    func purgeTombstones(olderThanMilliseconds: Int64) async throws -> Int
    /// Flushes and closes (on shutdown).
    func close() async

    // Sharing. The shared database itself goes through the methods above with a
    // scope of kind `.shared`: each checks the caller's access in its own transaction.
    /// Users by the email given at `user create` or by record name; unknown ones are absent.
    func discoverUsers(emails: [String], recordNames: [String]) async throws -> [UserIdentity]
    /// `public/records/resolve` (and with `accept`, `public/records/accept`): one result per shortGUID.
    func resolveShares(_ scope: DatabaseScope, shortGUIDs: [String], accept: Bool) async throws -> [Result<JSONValue, ServerError>]
    /// `shared/invitations/list`: the shares inviting the caller that it has not accepted.
    func invitations(_ scope: DatabaseScope) async throws -> [JSONValue]
    /// `shared/invitations/decline`: one result per shortGUID (the invitation kept as `REMOVED`).
    func declineInvitations(_ scope: DatabaseScope, shortGUIDs: [String]) async throws -> [Result<JSONValue, ServerError>]
    /// `zones/lookup` in the shared database (the zone names its owner).
    func lookupSharedZone(_ scope: DatabaseScope, zone: ZoneID) async throws -> ZoneInfo

    // Assets. The rules (who may upload, attach and download) are the API's;
    // these keep the upload URLs, the receipts and the bytes.
    /// The secret that signs download URLs: one per store, so any daemon honours any other's URLs.
    func assetSigningSecret() async throws -> [UInt8]
    func createAssetUploads(_ uploads: [AssetUpload]) async throws
    /// Spends the upload URL `id` and returns it, or nil when it is unknown, spent or created before `createdAfter`.
    func claimAssetUpload(id: String, createdAfter: Int64) async throws -> AssetUpload?
    /// Where the daemon writes an upload while it arrives (`completeAssetUpload` takes the file from there).
    func assetStagingDirectory() throws -> String
    /// Keeps the bytes in the file at `path` (moved or copied, then removed) unless the scope
    /// already holds them, and gives the upload its checksum and receipt.
    func completeAssetUpload(id: String, blob: AssetBlob, stagedFile path: String, receipt: String) async throws
    /// The uploads these receipts belong to (unknown receipts are absent).
    func assetUploads(receipts: [String]) async throws -> [AssetUpload]
    /// Whether `userID` has uploaded these bytes into the scope (so it may attach them without a receipt).
    func hasUploadedAsset(userID: Int64, scopeKey: String, checksum: String) async throws -> Bool
    /// Spends the receipts of saved records and marks their bytes attached.
    func markAssetsAttached(receipts: [String]) async throws
    func assetBlob(scopeKey: String, checksum: String) async throws -> AssetBlob?
    /// Up to `maximumLength` bytes of `blob` from `offset` (a download reads the asset piece by piece).
    func readAssetBlob(_ blob: AssetBlob, offset: Int64, maximumLength: Int) async throws -> ByteBuffer
    /// How much of an asset a download asks `readAssetBlob` for at a time: what the backend reads
    /// in one go (a file read on SQLite, a stored chunk on PostgreSQL).
    var assetPieceBytes: Int { get }
    /// Removes expired upload URLs and receipts, bytes never attached after `AssetLimits.unattachedMilliseconds`,
    /// and bytes no live record has referred to for `releasedMilliseconds`; returns how many assets went.
    func sweepAssets(releasedMilliseconds: Int64) async throws -> Int

    /// Records that the daemon `daemonID` is alive and returns how many daemons serve this store
    /// now (their per-user rate limits share the configured rate). One for an embedded store.
    func liveDaemonCount(heartbeatFrom daemonID: String) async throws -> Int
}

extension RecordStorage {
    package func createUser(name: String) async throws -> (user: User, token: String) { try await createUser(name: name, email: nil) }

    package func createUser(name: String, email: String?) async throws -> (user: User, token: String) {
        try await createUser(name: name, email: email, tokenExpiresAt: nil)
    }

    package func issueToken(userName: String) async throws -> (user: User, token: String) { try await issueToken(userName: userName, expiresAt: nil) }
}
