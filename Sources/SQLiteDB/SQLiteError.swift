import CSQLite

/// A failure reported by SQLite, with its result code and message.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    public var code: Int32
    public var message: String
    public var sql: String?

    public var description: String {
        if let sql { return "SQLite error \(code): \(message) (in \(sql.prefix(120)))" }
        return "SQLite error \(code): \(message)"
    }

    /// The database was locked by another process for longer than the busy timeout.
    public var isBusy: Bool { code & 0xFF == SQLITE_BUSY || code & 0xFF == SQLITE_LOCKED }
    /// The disk is full or failed an I/O: the write may succeed later.
    public var isDiskFailure: Bool { code & 0xFF == SQLITE_FULL || code & 0xFF == SQLITE_IOERR }
    public var isConstraintViolation: Bool { code & 0xFF == SQLITE_CONSTRAINT }
}

extension SQLiteError {
    /// The failure `code` with the database's message for it (in an extension: the memberwise
    /// initializer stays).
    init(_ code: Int32, database: OpaquePointer, sql: String?) {
        self.init(code: code, message: String(cString: sqlite3_errmsg(database)), sql: sql)
    }
}
