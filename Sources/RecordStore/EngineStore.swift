import NIOCore
import RecordModel

/// The store: `RecordStorage` as the engine's transaction scripts on a backend's database, with
/// the backend (`StoreBackend`) for what only it knows. Each method is written here once for
/// every backend.
package final class EngineStore<Backend: StoreBackend>: RecordStorage {
    package let backend: Backend

    package init(_ backend: Backend) { self.backend = backend }

    package var engine: StoreEngine { backend.engine }

    // MARK: Users and credentials

    package func createUser(name: String, email: String?, tokenExpiresAt: Int64?) async throws -> (user: User, token: String) {
        try await engine.createUser(name: name, email: email, tokenExpiresAt: tokenExpiresAt)
    }

    package func issueToken(userName: String, expiresAt: Int64?) async throws -> (user: User, token: String) {
        try await engine.issueToken(userName: userName, expiresAt: expiresAt)
    }

    package func listUsers() async throws -> [User] { try await engine.listUsers() }
    package func userSummaries() async throws -> [UserSummary] { try await engine.userSummaries() }
    package func editUser(name: String, email: String) async throws -> UserSummary { try await engine.editUser(name: name, email: email) }
    package func deleteUser(name: String) async throws -> UserDeletion { try await engine.deleteUser(name: name) }

    package func revokeTokens(userName: String, token: String?) async throws -> (user: User, revoked: Int) {
        try await engine.revokeTokens(userName: userName, token: token)
    }

    package func setPasswordHash(userName: String, hash: String) async throws -> User { try await engine.setPasswordHash(userName: userName, hash: hash) }
    package func passwordCredential(login: String) async throws -> PasswordCredential? { try await engine.passwordCredential(login: login) }
    package func checkIntegrity() async throws -> [String] { try await engine.checkIntegrity(bytes: backend.assetBytes) }
    package func createAPIToken() async throws -> String { try await engine.createAPIToken() }

    package func authenticate(bearerToken: String) async throws -> User? {
        try await engine.authenticate(bearerToken: bearerToken, uses: backend.tokenUses)
    }

    package func authenticate(apiToken: String, webAuthToken: String) async throws -> User? {
        try await engine.authenticate(apiToken: apiToken, webAuthToken: webAuthToken, uses: backend.tokenUses)
    }

    package func isValidAPIToken(_ apiToken: String) async throws -> Bool { try await engine.isValidAPIToken(apiToken) }
    package func addServerKey(pem: String, name: String?) async throws -> String { try await engine.addServerKey(pem: pem, name: name) }
    package func serverKey(keyID: String) async throws -> ServerKey? { try await engine.serverKey(keyID: keyID) }

    // MARK: Zones

    package func listZones(_ scope: DatabaseScope) async throws -> [ZoneInfo] {
        if scope.kind == .shared { return try await engine.listSharedZones(scope) }
        return try await engine.listZones(scope)
    }

    package func lookupZone(_ scope: DatabaseScope, zoneName: String) async throws -> ZoneInfo {
        try await engine.lookupZone(scope, zoneName: zoneName)
    }

    package func createZone(_ scope: DatabaseScope, zoneName: String) async throws -> ZoneInfo {
        try await engine.createZone(scope, zoneName: zoneName)
    }

    package func deleteZone(_ scope: DatabaseScope, zoneName: String) async throws {
        try await engine.deleteZone(scope, zoneName: zoneName)
    }

    // MARK: Records

    package func modifyRecords(_ scope: DatabaseScope, zone: ZoneID, operations: [RecordOperation], atomic: Bool,
                               deviceID: String?) async throws -> [RecordOperationResult]
    {
        try await engine.modifyRecords(scope, zone: zone, operations: operations, atomic: atomic, deviceID: deviceID)
    }

    package func lookupRecords(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String]) async throws
        -> [Result<StoredRecord, ServerError>]
    {
        try await engine.lookupRecords(scope, zone: zone, recordNames: recordNames)
    }

    package func queryRecords(_ scope: DatabaseScope, zone: ZoneID, query: RecordQuery, resultsLimit: Int,
                              continuationMarker: String?) async throws -> QueryPage
    {
        try await engine.queryRecords(scope, zone: zone, query: query, resultsLimit: resultsLimit, continuationMarker: continuationMarker)
    }

    // MARK: Change feeds

    package func zoneChanges(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                             recordTypes: Set<String>?) async throws -> ZoneChangesPage
    {
        try await engine.zoneChanges(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes)
    }

    package func databaseChanges(_ scope: DatabaseScope, syncToken: String?, resultsLimit: Int) async throws -> DatabaseChangesPage {
        if scope.kind == .shared { return try await engine.sharedDatabaseChanges(scope, syncToken: syncToken) }
        return try await engine.databaseChanges(scope, syncToken: syncToken, resultsLimit: resultsLimit)
    }

    /// The page's record JSON is written from the driver's row buffers as the rows are read
    /// (`StoreEngine.zoneChangesJSON`): the task receives one buffer, not a page of records.
    package func zoneChangesJSON(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                                 recordTypes: Set<String>?, options: RecordJSONOptions) async throws -> SerializedRecordPage
    {
        try await engine.zoneChangesJSON(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes,
                                         options: options)
    }

    package func lookupRecordsJSON(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String], options: RecordJSONOptions) async throws
        -> SerializedRecords
    {
        try await engine.lookupRecordsJSON(scope, zone: zone, recordNames: recordNames, options: options)
    }

    // MARK: Subscriptions and notifications

    package func modifySubscriptions(_ scope: DatabaseScope, operations: [SubscriptionOperation]) async throws
        -> [Result<Subscription?, ServerError>]
    {
        try await engine.modifySubscriptions(scope, operations: operations)
    }

    package func listSubscriptions(_ scope: DatabaseScope) async throws -> [Subscription] { try await engine.listSubscriptions(scope) }

    package func createPushToken(_ scope: DatabaseScope, apnsEnvironment: String, authTokenHash: String?) async throws -> PushToken {
        try await engine.createPushToken(scope, apnsEnvironment: apnsEnvironment, authTokenHash: authTokenHash)
    }

    package func pushToken(_ scope: DatabaseScope, token: String) async throws -> PushToken { try await engine.pushToken(scope, token: token) }

    package func courierChannel(token: String, container: String, environment: Environment) async throws -> PushToken? {
        try await engine.courierChannel(token: token, container: container, environment: environment)
    }

    package func advanceCourierPosition(token: String, to cursor: Int64) async throws {
        try await engine.advanceCourierPosition(token: token, to: cursor)
    }

    package func notifications(databaseID: Int64, after cursor: Int64, limit: Int) async throws -> [StoredNotification] {
        try await engine.notifications(databaseID: databaseID, after: cursor, limit: limit)
    }

    package func checkReady() async throws { try await backend.checkReady() }

    package func setCommitObserver(_ observer: @escaping @Sendable (Set<Int64>) -> Void) { backend.setCommitObserver(observer) }

    package func purgeNotifications(olderThanMilliseconds age: Int64) async throws -> Int {
        try await engine.purgeNotifications(olderThanMilliseconds: age)
    }

    // MARK: Upkeep

    package func statistics() async throws -> StoreStatistics { try await engine.statistics() }

    package func purgeTombstones(olderThanMilliseconds age: Int64) async throws -> Int {
        try await engine.purgeTombstones(olderThanMilliseconds: age)
    }

    package func close() async { await backend.close() }

    package func liveDaemonCount(heartbeatFrom daemonID: String) async throws -> Int {
        try await backend.liveDaemonCount(heartbeatFrom: daemonID)
    }

    // MARK: Sharing

    package func discoverUsers(emails: [String], recordNames: [String]) async throws -> [UserIdentity] {
        try await engine.discoverUsers(emails: emails, recordNames: recordNames)
    }

    package func resolveShares(_ scope: DatabaseScope, shortGUIDs: [String], accept: Bool) async throws -> [Result<JSONValue, ServerError>] {
        try await engine.resolveShares(scope, shortGUIDs: shortGUIDs, accept: accept)
    }

    package func invitations(_ scope: DatabaseScope) async throws -> [JSONValue] { try await engine.invitations(scope) }

    package func declineInvitations(_ scope: DatabaseScope, shortGUIDs: [String]) async throws -> [Result<JSONValue, ServerError>] {
        try await engine.declineInvitations(scope, shortGUIDs: shortGUIDs)
    }

    package func lookupSharedZone(_ scope: DatabaseScope, zone: ZoneID) async throws -> ZoneInfo {
        try await engine.lookupSharedZone(scope, zone: zone)
    }

    // MARK: Assets

    package func assetSigningSecret() async throws -> [UInt8] { try await engine.assetSigningSecret() }
    package func createAssetUploads(_ uploads: [AssetUpload]) async throws { try await engine.createAssetUploads(uploads) }

    package func claimAssetUpload(id: String, createdAfter: Int64) async throws -> AssetUpload? {
        try await engine.claimAssetUpload(id: id, createdAfter: createdAfter)
    }

    package func assetStagingDirectory() throws -> String { try backend.assetStagingDirectory() }

    package func completeAssetUpload(id: String, blob: AssetBlob, stagedFile path: String, receipt: String) async throws {
        try await engine.completeAssetUpload(id: id, blob: blob, stagedFile: path, receipt: receipt, bytes: backend.assetBytes)
    }

    package func assetUploads(receipts: [String]) async throws -> [AssetUpload] { try await engine.assetUploads(receipts: receipts) }

    package func hasUploadedAsset(userID: Int64, scopeKey: String, checksum: String) async throws -> Bool {
        try await engine.hasUploadedAsset(userID: userID, scopeKey: scopeKey, checksum: checksum)
    }

    package func markAssetsAttached(receipts: [String]) async throws { try await engine.markAssetsAttached(receipts: receipts) }

    package func assetBlob(scopeKey: String, checksum: String) async throws -> AssetBlob? {
        try await engine.assetBlob(scopeKey: scopeKey, checksum: checksum)
    }

    package func readAssetBlob(_ blob: AssetBlob, offset: Int64, maximumLength: Int) async throws -> ByteBuffer {
        try await backend.readAssetBlob(blob, offset: offset, maximumLength: maximumLength)
    }

    package var assetPieceBytes: Int { backend.assetPieceBytes }

    package func sweepAssets(releasedMilliseconds: Int64) async throws -> Int {
        try await engine.sweepAssets(releasedMilliseconds: releasedMilliseconds, bytes: backend.assetBytes)
    }
}
