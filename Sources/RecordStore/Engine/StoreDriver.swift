
/// The narrow interface the store engine's transaction scripts are written against. SQLite
/// (`SQLiteStoreDriver`) and PostgreSQL (`PostgresStoreDriver`) each implement it; everything
/// CloudKit means (zones, records, feeds, sharing) lives above it, once.

/// One result row: its columns in the order the statement selected them.
package struct StoreRow: Sendable, Equatable {
    package var values: [SQLValue]

    package init(_ values: [SQLValue]) { self.values = values }

    package func isNull(_ column: Int) -> Bool { values[column] == .null }

    package func int(_ column: Int) -> Int64 {
        switch values[column] {
        case .int(let value): return value
        case .double(let value): return Int64(value)
        case .text(let text): return Int64(text) ?? 0
        default: return 0
        }
    }

    package func double(_ column: Int) -> Double {
        switch values[column] {
        case .double(let value): return value
        case .int(let value): return Double(value)
        case .text(let text): return Double(text) ?? 0
        default: return 0
        }
    }

    package func text(_ column: Int) -> String {
        switch values[column] {
        case .text(let text): return text
        case .int(let value): return String(value)
        case .double(let value): return String(value)
        case .blob(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .null: return ""
        }
    }

    package func blob(_ column: Int) -> [UInt8] {
        switch values[column] {
        case .blob(let bytes): return bytes
        case .text(let text): return Array(text.utf8)
        default: return []
        }
    }

    package func optionalInt(_ column: Int) -> Int64? { isNull(column) ? nil : int(column) }
    package func optionalText(_ column: Int) -> String? { isNull(column) ? nil : text(column) }
}

/// One row of a statement being read, its columns borrowed from the driver's buffers: valid only
/// for the call it is handed to. A page of records is written from it as JSON without a string or
/// array made per column.
package protocol StoreCursor {
    func isNull(_ column: Int) -> Bool
    func int(_ column: Int) -> Int64
    /// The column's bytes (a text's UTF-8), or nil for NULL.
    func bytes(_ column: Int) -> UnsafeRawBufferPointer?
}

extension StoreCursor {
    package func text(_ column: Int) -> String { bytes(column).map { String(decoding: $0, as: UTF8.self) } ?? "" }
    package func optionalText(_ column: Int) -> String? { bytes(column).map { String(decoding: $0, as: UTF8.self) } }
    package func optionalInt(_ column: Int) -> Int64? { isNull(column) ? nil : int(column) }
}

/// One transaction's connection. It belongs to the script it is handed to and is never kept
/// past it. Statements use `?` placeholders; the driver turns them into its own.
package protocol StoreConnection {
    var dialect: any SQLDialect { get }
    /// Every row `sql` returns.
    func rows(_ sql: String, _ arguments: [SQLValue]) async throws -> [StoreRow]
    /// Hands each row `sql` returns to `row` as it is read (`StoreCursor`), in order.
    func forEachRow(_ sql: String, _ arguments: [SQLValue], _ row: (any StoreCursor) throws -> Void) async throws
    /// Runs a statement that returns no rows; returns how many rows it changed.
    @discardableResult
    func execute(_ sql: String, _ arguments: [SQLValue]) async throws -> Int
    /// Inserts `rows` into `table` in a bounded number of statements (multi-row `VALUES` on
    /// SQLite, one `unnest` of arrays on PostgreSQL); `suffix` follows the rows (an
    /// `ON CONFLICT …` clause, a `RETURNING …` list) and the rows it returns are returned.
    @discardableResult
    func insertRows(into table: String, columns: [StoreColumn], rows: [[SQLValue]], suffix: String) async throws -> [StoreRow]
}

extension StoreConnection {
    package func rows(_ sql: String) async throws -> [StoreRow] { try await rows(sql, []) }

    @discardableResult
    package func execute(_ sql: String) async throws -> Int { try await execute(sql, []) }

    /// The first row, or nil.
    package func first(_ sql: String, _ arguments: [SQLValue] = []) async throws -> StoreRow? {
        try await rows(sql, arguments).first
    }

    /// The first column of the first row as an integer, or nil when there is no row or it is NULL.
    package func scalarInt(_ sql: String, _ arguments: [SQLValue] = []) async throws -> Int64? {
        try await first(sql, arguments).flatMap { $0.optionalInt(0) }
    }

    package func insertRows(into table: String, columns: [StoreColumn], rows: [[SQLValue]]) async throws {
        _ = try await insertRows(into: table, columns: columns, rows: rows, suffix: "")
    }
}

/// What a write script decides: keep its writes, or undo them (an atomic batch that failed) and
/// still answer.
package enum TransactionOutcome<Value: Sendable>: Sendable {
    case commit(Value)
    case rollback(Value)

    package var value: Value {
        switch self {
        case .commit(let value), .rollback(let value): return value
        }
    }
}

/// An error a script throws for the engine itself to catch (to run the script again another
/// way): a driver rolls the transaction back and passes it on unchanged, never as a database failure.
package protocol ScriptSignal: Error {}

/// A database the engine runs transactions on, each under the request deadline.
package protocol StoreDriver: Sendable {
    var dialect: any SQLDialect { get }
    /// Runs `body` in a read transaction that sees one snapshot.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T
    /// Runs `body`, whose answer is one statement, outside an explicit transaction (one statement
    /// sees one snapshot on its own): PostgreSQL saves the `BEGIN` and `COMMIT` round trips. A
    /// later statement of `body` sees a later snapshot.
    func readStatement<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T
    /// `readStatement` for a statement that reads a row or a few by key (a request's credentials),
    /// short enough that a driver may run it on the caller's thread: handing it to another thread
    /// and back costs more than the read.
    func readByKey<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T
    /// Runs `body` in a write transaction; returns once its writes are durable (or undone, as
    /// the outcome asks). A script that throws leaves nothing behind.
    func writeTransaction<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> TransactionOutcome<T>) async throws -> T
    /// `writeTransaction`, calling `committed` with the answer the moment the commit is durable (a
    /// rolled-back outcome calls nothing), before the caller resumes: on SQLite on the writer's
    /// own thread, so what a commit sets off (the push hub's wake) does not wait for the caller's
    /// task to be scheduled again. `size` is how many rows the script is about to write (a
    /// modify batch's operations), for a writer that commits transactions in groups.
    func writeTransaction<T: Sendable>(size: Int, _ body: @escaping @Sendable (any StoreConnection) async throws -> TransactionOutcome<T>,
                                       committed: @escaping @Sendable (T) -> Void) async throws -> T
    /// Tells every daemon on the database, when the caller's transaction commits, that
    /// `databaseID` changed (PostgreSQL's `NOTIFY`; nothing on SQLite, whose one process hears
    /// its own commits).
    func announceCommit(of databaseID: Int64, _ connection: any StoreConnection) async throws
}

extension StoreDriver {
    package func readStatement<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        try await read(body)
    }

    package func readByKey<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        try await readStatement(body)
    }

    package func announceCommit(of databaseID: Int64, _ connection: any StoreConnection) async throws {}

    package func writeTransaction<T: Sendable>(size: Int, _ body: @escaping @Sendable (any StoreConnection) async throws -> TransactionOutcome<T>,
                                               committed: @escaping @Sendable (T) -> Void) async throws -> T
    {
        let (value, kept) = try await writeTransaction { connection -> TransactionOutcome<(T, Bool)> in
            switch try await body(connection) {
            case .commit(let value): return .commit((value, true))
            case .rollback(let value): return .rollback((value, false))
            }
        }
        if kept { committed(value) }
        return value
    }

    /// A write script that always keeps its writes.
    package func write<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        try await writeTransaction { connection in TransactionOutcome.commit(try await body(connection)) }
    }
}
