import CSQLite
import Foundation

/// One SQLite connection. Not thread-safe by itself: `SQLiteDatabase` hands each connection to one
/// thread at a time.
public final class SQLiteConnection {
    let handle: OpaquePointer
    private var statementCache: [StatementKey: SQLiteStatement] = [:]
    /// The statement used last, looked up without hashing: a batch runs one insert per record in a row.
    private var recentSQL = ""
    private var recentStatement: SQLiteStatement?
    public let path: String

    public enum Synchronous: String, Sendable { case off = "OFF", normal = "NORMAL", full = "FULL" }

    /// Set once, before the first connection: SQLite's allocation statistics (nothing here reads
    /// them) take a process-wide mutex on every allocation of every connection.
    private static let libraryConfigured: Void = {
        _ = scorebook_sqlite3_disable_memory_statistics()
    }()

    /// Whether SQLite counts its allocations (it does not once a connection was opened here).
    public static var countsAllocations: Bool { sqlite3_memory_used() > 0 }

    /// Opens (creating if needed) the database at `path` in WAL mode.
    public init(path: String, readOnly: Bool = false, synchronous: Synchronous = .full) throws {
        _ = Self.libraryConfigured
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: "\(message): \(path)")
        }
        self.handle = db
        self.path = path
        sqlite3_busy_timeout(db, 10_000)
        sqlite3_extended_result_codes(db, 1)
        if !readOnly {
            try execute("PRAGMA journal_mode=WAL")
            try execute("PRAGMA synchronous=\(synchronous.rawValue)")
        }
        try execute("PRAGMA foreign_keys=OFF")
        try execute("PRAGMA temp_store=MEMORY")
    }

    /// How long a statement waits for a lock another process holds before failing with SQLITE_BUSY.
    public func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Defines a SQL function `name()` on this connection that returns `value`: statements
    /// written once can then be scoped to a value fixed per connection (the local store's book).
    public func defineConstantFunction(_ name: String, value: Int64) throws {
        let box = UnsafeMutablePointer<Int64>.allocate(capacity: 1)
        box.initialize(to: value)
        let rc = sqlite3_create_function_v2(
            handle, name, 0, SQLITE_UTF8 | SQLITE_DETERMINISTIC, box,
            { context, _, _ in
                let pointer = sqlite3_user_data(context)!.assumingMemoryBound(to: Int64.self)
                sqlite3_result_int64(context, pointer.pointee)
            }, nil, nil,
            { pointer in pointer?.assumingMemoryBound(to: Int64.self).deallocate() })
        if rc != SQLITE_OK { throw error(rc) }
    }

    deinit {
        recentStatement = nil
        statementCache.removeAll()
        sqlite3_close_v2(handle)
    }

    func error(_ rc: Int32, sql: String? = nil) -> SQLiteError {
        SQLiteError(rc, database: handle, sql: sql)
    }

    /// Runs one or more statements without results.
    public func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "error"
            sqlite3_free(message)
            throw SQLiteError(code: rc, message: text, sql: sql)
        }
    }

    /// A cached prepared statement for `sql`, bound to `arguments`.
    public func statement(_ sql: String, _ arguments: [SQLValue] = []) throws -> SQLiteStatement {
        let statement: SQLiteStatement
        if let recentStatement, recentSQL.utf8.count == sql.utf8.count, recentSQL == sql {
            statement = recentStatement
        } else {
            let key = StatementKey(sql: sql)
            if let cached = statementCache[key] {
                statement = cached
            } else {
                statement = try SQLiteStatement(database: handle, sql: sql)
                statementCache[key] = statement
            }
            recentSQL = sql
            recentStatement = statement
        }
        try statement.bind(arguments)
        return statement
    }

    /// Runs a statement that returns no rows; returns the number of rows changed.
    @discardableResult
    public func run(_ sql: String, _ arguments: [SQLValue] = []) throws -> Int {
        let statement = try statement(sql, arguments)
        defer { statement.reset() }
        while try statement.step() {}
        return Int(sqlite3_changes(handle))
    }

    /// Calls `row` for each result row.
    public func query(_ sql: String, _ arguments: [SQLValue] = [], _ row: (SQLiteStatement) throws -> Void) throws {
        let statement = try statement(sql, arguments)
        defer { statement.reset() }
        while try statement.step() { try row(statement) }
    }

    /// Maps each row to a value.
    public func map<T>(_ sql: String, _ arguments: [SQLValue] = [], _ transform: (SQLiteStatement) throws -> T) throws -> [T] {
        var results: [T] = []
        try query(sql, arguments) { results.append(try transform($0)) }
        return results
    }

    /// The first row mapped, or nil.
    public func first<T>(_ sql: String, _ arguments: [SQLValue] = [], _ transform: (SQLiteStatement) throws -> T) throws -> T? {
        let statement = try statement(sql, arguments)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return try transform(statement)
    }

    public func scalarInt(_ sql: String, _ arguments: [SQLValue] = []) throws -> Int64? {
        try first(sql, arguments) { $0.isNull(0) ? nil : $0.int64(0) } ?? nil
    }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Whether a transaction is open (false again after SQLite rolled one back on its own error).
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` in a transaction (`BEGIN IMMEDIATE`, so the write lock is taken up front);
    /// commits if it returns, rolls back if it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// A read transaction: every query inside sees one snapshot.
    public func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN DEFERRED")
        defer { try? execute("COMMIT") }
        return try body()
    }

    /// Copies the whole database to `path` while others keep using it (the online backup API).
    public func backup(to path: String) throws {
        let destination = try SQLiteConnection(path: path, synchronous: .full)
        guard let backup = sqlite3_backup_init(destination.handle, "main", handle, "main") else {
            throw destination.error(sqlite3_errcode(destination.handle))
        }
        var rc: Int32
        repeat {
            rc = sqlite3_backup_step(backup, 256)
            if rc == SQLITE_BUSY || rc == SQLITE_LOCKED { usleep(5_000) }
        } while rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED
        sqlite3_backup_finish(backup)
        guard rc == SQLITE_DONE else { throw destination.error(rc) }
    }
}

/// A statement cache key that hashes only the SQL's length and its last 64 bytes: a batch looks
/// statements up several times per record, and hashing whole statements of a few hundred bytes
/// showed in write profiles. Equality still compares the whole text (at once for the same literal).
struct StatementKey: Hashable {
    let sql: String

    func hash(into hasher: inout Hasher) {
        let utf8 = sql.utf8
        hasher.combine(utf8.count)
        let hashedContiguously: Void? = utf8.withContiguousStorageIfAvailable { bytes in
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.suffix(64))))
        }
        if hashedContiguously == nil { for byte in utf8.suffix(64) { hasher.combine(byte) } }
    }

    static func == (lhs: StatementKey, rhs: StatementKey) -> Bool { lhs.sql == rhs.sql }
}
