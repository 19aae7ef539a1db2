/// What one sync did: changes sent, remote changes applied, conflicts merged, and local edits
/// dropped. `receivedDeleted` counts every local record remote deletions removed, cascades
/// included, whether the deletion came from the change feed or from an answer to a send.
public struct SyncSummary: Equatable, Sendable {
    public var sentSaved = 0
    public var sentDeleted = 0
    public var receivedSaved = 0
    public var receivedDeleted = 0
    /// Records changed on both sides in the same field, settled by the merge rule.
    public var conflicts = 0
    /// Each field those conflicts settled: what was kept and what was lost.
    public var conflictDetails: [ConflictDetail] = []
    /// Local edits the server could not take because their record or its parent was deleted
    /// elsewhere (they are gone; the deletion stands).
    public var dropped: [DroppedChange] = []
    /// Books this file dropped because their zone is gone from the server.
    public var booksRemoved: [String] = []
    /// Which of those were shared with this user, with their owners' user record names: the
    /// server does not say whether the owner deleted the book, stopped sharing it or removed
    /// the user, only that it is gone.
    public var sharedBooksLost: [String: String] = [:]
    /// Pictures uploaded before the records that refer to them, and downloaded for fetched records.
    public var picturesUploaded = 0
    public var picturesDownloaded = 0

    public init() {}
}

/// Why a sync, login or watch failed, in one line a person can act on.
public struct SyncError: Error, CustomStringConvertible, Equatable {
    public var description: String
    /// The server refused the account's token: retrying cannot help, a watch stops.
    public var isAuthenticationFailure = false

    public init(_ description: String, isAuthenticationFailure: Bool = false) {
        self.description = description
        self.isAuthenticationFailure = isAuthenticationFailure
    }
}

/// The names under which the sync engine keeps its state in the store's settings.
public enum SyncSettingKey {
    public static let account = "account"
    public static let dataOwner = "dataOwner"
    public static let syncEnabled = "syncEnabled"
    public static let lastSync = "lastSync"
    public static let lastError = "lastError"
    /// Changes with every login, logout and `sync disable`; see `SyncSession`.
    public static let accountGeneration = "accountGeneration"
    static let syncToken = "syncToken"
    static let refetchInProgress = "refetchInProgress"
    static let zoneReady = "zoneReady"
    static let notificationChannel = "notificationChannel"
    static let notificationCursor = "notificationCursor"
}
