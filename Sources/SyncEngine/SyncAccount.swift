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
    /// Changes waiting to be sent, in every book of the store.
    public var pendingChanges: Int
    public var lastError: String?
    /// Each book's own share of that: what waits in it and its last error.
    public var books: [BookSyncStatus] = []
}

/// One book of a store in `status`.
public struct BookSyncStatus: Equatable, Sendable {
    /// The book as people name it: a shared book's title, else its zone name.
    public var name: String
    public var book: LocalBook
    public var pendingChanges: Int
    public var lastError: String?
}

/// Logging in and out, the sync switch, and status: the account rules of docs/guide/accounts.md
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
        let account = SyncAccount(endpoint: endpoint, userRecordName: user)
        // The decision and every write it leads to in one transaction: a watcher of the previous
        // account checks the account in its own transactions, so it sees all of this or none.
        try store.transaction { connection in
            let owner = try LocalRecordStore.setting(SyncSettingKey.dataOwner, in: connection)
            switch LoginPolicy.decide(dataOwner: owner, hasLocalData: try store.hasLocalData(), user: user) {
            case .refuse(let reason):
                throw SyncError(reason)
            case .adopt:
                // Whatever was learned from another account's server state does not apply.
                try store.forgetServerState(keepingSettings: [SyncSettingKey.syncEnabled])
            case .resume:
                break
            }
            try LocalRecordStore.setSetting(SyncSettingKey.account, account.json.serializedString(), in: connection)
            try LocalRecordStore.setSetting(SyncSettingKey.dataOwner, user, in: connection)
            try LocalRecordStore.setSetting(SyncSettingKey.accountGeneration, SyncSession.newGeneration(), in: connection)
        }
        return account
    }

    /// Forgets the credentials. The data stays, still the same user's, unless `deleteLocalData`,
    /// which empties the store.
    public func logout(deleteLocalData: Bool) throws {
        if deleteLocalData {
            try store.deleteAllData()
            return
        }
        try store.transaction { connection in
            for key in [SyncSettingKey.account, SyncSettingKey.notificationChannel, SyncSettingKey.notificationCursor] {
                try LocalRecordStore.setSetting(key, nil, in: connection)
            }
            try LocalRecordStore.setSetting(SyncSettingKey.accountGeneration, SyncSession.newGeneration(), in: connection)
        }
    }

    public func account() throws -> SyncAccount? {
        guard let text = try store.setting(SyncSettingKey.account), let json = try? JSONValue.parse(text) else { return nil }
        return SyncAccount(json: json)
    }

    /// The single switch: when off, `sync` refuses and nothing is sent (edits still queue).
    public func setSyncEnabled(_ enabled: Bool) throws {
        try store.transaction { connection in
            let wasEnabled = try LocalRecordStore.setting(SyncSettingKey.syncEnabled, in: connection) != "0"
            try LocalRecordStore.setSetting(SyncSettingKey.syncEnabled, enabled ? "1" : "0", in: connection)
            // Turning it off ends every running watch (see `SyncSession`).
            if wasEnabled && !enabled {
                try LocalRecordStore.setSetting(SyncSettingKey.accountGeneration, SyncSession.newGeneration(), in: connection)
            }
        }
    }

    public func isSyncEnabled() throws -> Bool {
        try store.setting(SyncSettingKey.syncEnabled) != "0"
    }

    /// Where the store stands, counting every book: a shared book's unsent scores are pending too.
    public func status() throws -> SyncStatus {
        let books = try store.books().filter { !$0.pendingDelete }.map { summary in
            let bookStore = try store.opening(summary.book)
            return BookSyncStatus(name: summary.title ?? summary.book.zoneName, book: summary.book,
                                  pendingChanges: try bookStore.pendingChangeCount(),
                                  lastError: try bookStore.setting(SyncSettingKey.lastError))
        }
        // The error of the book asked about, else the first book's that has one.
        let lastError = try store.setting(SyncSettingKey.lastError) ?? books.lazy.compactMap(\.lastError).first
        return SyncStatus(account: try account(), dataOwner: try store.setting(SyncSettingKey.dataOwner),
                          syncEnabled: try isSyncEnabled(),
                          lastSync: try store.setting(SyncSettingKey.lastSync).flatMap(ISO8601.date(from:)),
                          pendingChanges: books.reduce(0) { $0 + $1.pendingChanges }, lastError: lastError, books: books)
    }

    /// An engine for the store's account, or an error saying why syncing is not possible now.
    public func makeSynchronizer(zoneID: ZoneID) throws -> ZoneSynchronizer {
        // The account, the switch and the session read together, so the token used is the one
        // the session checks for.
        let (account, session) = try store.transaction { connection in
            (try LocalRecordStore.setting(SyncSettingKey.account, in: connection).flatMap { try? JSONValue.parse($0) }
                .flatMap(SyncAccount.init(json:)), try SyncSession.current(in: connection))
        }
        guard let account else {
            throw SyncError("not logged in; run 'scorebook account login --server URL --token TOKEN' first")
        }
        switch session {
        case .failure(let stopped) where stopped.reason == .syncDisabled:
            throw SyncError("sync is disabled; run 'scorebook sync enable' to turn it on")
        case .failure(let stopped):
            throw SyncError(stopped.description)
        case .success(let session):
            // A book shared with the user lives in its shared database.
            let database = store.book.scope == .shared ? makeDatabase(account.endpoint).sharedScope() : makeDatabase(account.endpoint)
            return ZoneSynchronizer(store: store, database: database, zoneID: zoneID, session: session)
        }
    }
}
