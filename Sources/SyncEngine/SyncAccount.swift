import Foundation
import RecordClient
import RecordModel

/// The account a store syncs with: the server, container and environment, the token, and the
/// user the token belongs to.
public struct SyncAccount: Equatable, Sendable {
    public var endpoint: ServerEndpoint
    public var userRecordName: String

    public var serverURL: URL { endpoint.baseURL }
    public var container: String { endpoint.container }
    public var environment: String { endpoint.environment }

    public init(endpoint: ServerEndpoint, userRecordName: String) {
        self.endpoint = endpoint
        self.userRecordName = userRecordName
    }

    var json: JSONValue {
        [
            "server": .string(endpoint.baseURL.absoluteString), "container": .string(endpoint.container),
            "environment": .string(endpoint.environment), "token": .string(endpoint.token),
            "userRecordName": .string(userRecordName),
        ]
    }

    init?(json: JSONValue) {
        guard let server = json["server"]?.stringValue, let url = URL(string: server),
              let container = json["container"]?.stringValue, let environment = json["environment"]?.stringValue,
              let token = json["token"]?.stringValue, let user = json["userRecordName"]?.stringValue
        else { return nil }
        self.init(endpoint: ServerEndpoint(baseURL: url, container: container, environment: environment, token: token),
                  userRecordName: user)
    }
}

/// Where a store stands: its account, the sync switch, the last sync and error, what waits.
public struct SyncStatus: Equatable, Sendable {
    public var account: SyncAccount?
    /// The user whose data the store holds (the last one logged in), if any.
    public var dataOwner: String?
    public var syncEnabled: Bool
    public var lastSync: Date?
    public var pendingChanges: Int
    public var lastError: String?
}

/// Logging in and out, the sync switch, and status: the account rules of docs/ACCOUNTS.md
/// applied to one store (the decision itself is `LoginPolicy`).
public struct AccountManager: Sendable {
    public let store: LocalRecordStore
    let makeDatabase: @Sendable (ServerEndpoint) -> any CloudDatabase

    public init(store: LocalRecordStore,
                makeDatabase: @escaping @Sendable (ServerEndpoint) -> any CloudDatabase = { RecordClient(endpoint: $0) })
    {
        self.store = store
        self.makeDatabase = makeDatabase
    }

    /// Checks the token with the server, then makes it the store's account, unless the store
    /// holds another user's data.
    @discardableResult
    public func login(serverURL: URL, container: String, environment: String, token: String) async throws -> SyncAccount {
        try await login(ServerEndpoint(baseURL: serverURL, container: container, environment: environment, token: token))
    }

    @discardableResult
    public func login(_ endpoint: ServerEndpoint) async throws -> SyncAccount {
        let user: String
        do {
            user = try await makeDatabase(endpoint).currentUserRecordName()
        } catch RecordClientError.server(let error, _)
            where error.code == .authenticationFailed || error.code == .authenticationRequired
        {
            throw SyncError("the server refused the token (\(error.code.rawValue))")
        } catch {
            throw ZoneSynchronizer.syncError(error)
        }
        let owner = try store.setting(SyncSettingKey.dataOwner)
        switch LoginPolicy.decide(dataOwner: owner, hasLocalData: try store.hasLocalData(), user: user) {
        case .refuse(let reason):
            throw SyncError(reason)
        case .adopt:
            // Whatever was learned from another account's server state does not apply.
            try store.forgetServerState(keepingSettings: [SyncSettingKey.syncEnabled])
        case .resume:
            break
        }
        let account = SyncAccount(endpoint: endpoint, userRecordName: user)
        try store.setSetting(SyncSettingKey.account, account.json.serializedString())
        try store.setSetting(SyncSettingKey.dataOwner, user)
        return account
    }

    /// Forgets the credentials. The data stays, still the same user's, unless `deleteLocalData`,
    /// which empties the store.
    public func logout(deleteLocalData: Bool) throws {
        if deleteLocalData {
            try store.deleteAllData()
            return
        }
        try store.setSetting(SyncSettingKey.account, nil)
        try store.setSetting(SyncSettingKey.notificationChannel, nil)
        try store.setSetting(SyncSettingKey.notificationCursor, nil)
    }

    public func account() throws -> SyncAccount? {
        guard let text = try store.setting(SyncSettingKey.account), let json = try? JSONValue.parse(text) else { return nil }
        return SyncAccount(json: json)
    }

    /// The single switch: when off, `sync` refuses and nothing is sent (edits still queue).
    public func setSyncEnabled(_ enabled: Bool) throws {
        try store.setSetting(SyncSettingKey.syncEnabled, enabled ? "1" : "0")
    }

    public func isSyncEnabled() throws -> Bool {
        try store.setting(SyncSettingKey.syncEnabled) != "0"
    }

    public func status() throws -> SyncStatus {
        SyncStatus(account: try account(), dataOwner: try store.setting(SyncSettingKey.dataOwner),
                   syncEnabled: try isSyncEnabled(),
                   lastSync: try store.setting(SyncSettingKey.lastSync).flatMap(ISO8601.date(from:)),
                   pendingChanges: try store.pendingChangeCount(), lastError: try store.setting(SyncSettingKey.lastError))
    }

    /// An engine for the store's account, or an error saying why syncing is not possible now.
    public func makeSynchronizer(zoneID: ZoneID) throws -> ZoneSynchronizer {
        guard let account = try account() else {
            throw SyncError("not logged in; run 'scorebook account login --server URL --token TOKEN' first")
        }
        guard try isSyncEnabled() else { throw SyncError("sync is disabled; run 'scorebook sync enable' to turn it on") }
        return ZoneSynchronizer(store: store, database: makeDatabase(account.endpoint), zoneID: zoneID)
    }
}
