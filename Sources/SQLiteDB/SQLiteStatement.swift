import CSQLite

private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A prepared statement. Cached per connection; `bind` resets it, so a cached statement can be
/// reused at once.
public final class SQLiteStatement {
    let handle: OpaquePointer
    let sql: String
    /// The connection's database handle, which reports the statement's errors.
    let database: OpaquePointer

    init(database: OpaquePointer, sql: String) throws {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(database, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw SQLiteError(rc, database: database, sql: sql) }
        self.handle = statement
        self.sql = sql
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    /// Computed: a stored static pointer is shared mutable state to the compiler; this is a constant address.
    private static var emptyText: UnsafePointer<CChar> {
        UnsafeRawPointer(("" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
    }

    public func bind(_ values: [SQLValue]) throws {
        sqlite3_reset(handle)
        // Every parameter is bound again below when all are given (the usual case): clearing
        // them first showed in the write path's profile.
        if values.count < Int(sqlite3_bind_parameter_count(handle)) { sqlite3_clear_bindings(handle) }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, index)
            case .int(let i): rc = sqlite3_bind_int64(handle, index, i)
            case .double(let d): rc = sqlite3_bind_double(handle, index, d)
            case .text(var s):
                // The string's own bytes with their length: passing the String would make a C
                // string first (a copy, 3% of a batch write's store time).
                rc = s.withUTF8 { bytes in
                    bytes.withMemoryRebound(to: CChar.self) { text in
                        // An empty string still binds text, not NULL: a pointer is needed.
                        sqlite3_bind_text(handle, index, text.baseAddress ?? SQLiteStatement.emptyText, Int32(text.count), transientDestructor)
                    }
                }
            case .blob(let bytes):
                rc = bytes.withUnsafeBytes { buffer in
                    sqlite3_bind_blob(handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count), transientDestructor)
                }
            }
            guard rc == SQLITE_OK else { throw SQLiteError(rc, database: database, sql: sql) }
        }
    }

    /// Advances to the next row; false when done.
    public func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = SQLiteError(rc, database: database, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    public func reset() { sqlite3_reset(handle) }

    public var columnCount: Int32 { sqlite3_column_count(handle) }

    /// The column's value as SQLite stored it.
    public func value(_ column: Int32) -> SQLValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER: return .int(int64(column))
        case SQLITE_FLOAT: return .double(double(column))
        case SQLITE_BLOB: return .blob(blob(column))
        default: return .text(text(column))
        }
    }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    public func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    public func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    public func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }
    public func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    /// A column's bytes where SQLite holds them, valid until the statement steps or resets: a row
    /// written out as it is read, without a copy of its own.
    public func bytes(_ column: Int32) -> UnsafeRawBufferPointer {
        guard let pointer = sqlite3_column_blob(handle, column) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(handle, column)))
    }

    /// `bytes`, or nil for NULL. Only an empty or NULL value has no pointer, so only then is the
    /// type asked (a feed row reads a dozen columns: a third fewer calls into SQLite).
    public func optionalBytes(_ column: Int32) -> UnsafeRawBufferPointer? {
        if let pointer = sqlite3_column_blob(handle, column) {
            return UnsafeRawBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(handle, column)))
        }
        return isNull(column) ? nil : UnsafeRawBufferPointer(start: nil, count: 0)
    }

    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
