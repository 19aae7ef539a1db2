import SQLiteDB

/// Small named values kept with the data: tokens, account, switches, last sync and error.
extension LocalRecordStore {
    public func setting(_ key: String) throws -> String? {
        try withConnection { try Self.setting(key, in: $0) }
    }

    /// Stores a setting; a value equal to the stored one writes nothing. Each write is a
    /// transaction with its fsync, and most syncs would otherwise rewrite `lastError` as nil and
    /// the notification cursor unchanged.
    public func setSetting(_ key: String, _ value: String?) throws {
        try withConnection { connection in
            guard try Self.setting(key, in: connection) != value else { return }
            try transaction { try Self.setSetting(key, value, in: $0) }
        }
    }

    /// The keys of the file's settings that start with `prefix`.
    public func settingKeys(withPrefix prefix: String) throws -> [String] {
        try withConnection { connection in
            try connection.map("SELECT key FROM settings WHERE book = 0 AND substr(key, 1, length(?)) = ?", [.text(prefix), .text(prefix)]) {
                $0.text(0)
            }
        }
    }

    /// Settings that belong to one book (its zone's sync state); the rest belong to the file
    /// (account, sync switch, notification channel) and are stored under book 0.
    static let perBookSettingKeys: Set<String> = [
        SyncSettingKey.syncToken, SyncSettingKey.refetchInProgress, SyncSettingKey.zoneReady,
        SyncSettingKey.lastSync, SyncSettingKey.lastError,
    ]

    /// The SQL for the book a setting is kept under.
    static func settingBook(_ key: String) -> String {
        perBookSettingKeys.contains(key) ? "current_book()" : "0"
    }

    static func setting(_ key: String, in connection: SQLiteConnection) throws -> String? {
        try connection.first("SELECT value FROM settings WHERE book = \(settingBook(key)) AND key = ?", [.text(key)]) { $0.text(0) }
    }

    static func setSetting(_ key: String, _ value: String?, in connection: SQLiteConnection) throws {
        if let value {
            try connection.run("INSERT INTO settings(book, key, value) VALUES(\(settingBook(key)), ?, ?) ON CONFLICT(book, key) DO UPDATE SET value = excluded.value",
                               [.text(key), .text(value)])
        } else {
            try connection.run("DELETE FROM settings WHERE book = \(settingBook(key)) AND key = ?", [.text(key)])
        }
    }
}
