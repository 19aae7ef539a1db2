import Logging
import NIOCore
import PostgresNIO
import RecordModel
import RecordStore
import Synchronization

/// The PostgreSQL driver: each transaction on a connection of the store's pool, under the request
/// deadline; past it the transaction is abandoned and its connection closed (the server rolls
/// it back), never reused.
package struct PostgresStoreDriver: StoreDriver {
    let pool: PostgresConnectionPool
    let logger: Logger
    let requestDeadline: Duration

    package var dialect: any SQLDialect { PostgresDialect() }

    /// The channel on which every commit that changed a database announces the database's id.
    static let commitChannel = "scorebook_commits"

    package func read<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await transaction(readOnly: true) { .commit(try await body(PostgresStoreConnection(connection: $0, logger: logger))) }
    }

    package func readStatement<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await onConnection { try await body(PostgresStoreConnection(connection: $0, logger: logger)) }
    }

    package func writeTransaction<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> TransactionOutcome<T>)
        async throws -> T
    {
        let logger = self.logger
        return try await transaction { try await body(PostgresStoreConnection(connection: $0, logger: logger)) }
    }

    package func announceCommit(of databaseID: Int64, _ connection: any StoreConnection) async throws {
        try await connection.execute("SELECT pg_notify(?, ?)", [.text(PostgresStoreDriver.commitChannel), .text(String(databaseID))])
    }

    /// Runs `body` in one transaction within the request deadline (`onConnection`).
    func transaction<T: Sendable>(readOnly: Bool = false,
                                  _ body: @escaping @Sendable (PostgresConnection) async throws -> TransactionOutcome<T>) async throws -> T
    {
        let logger = self.logger
        return try await onConnection { connection in
            try await connection.query(
                readOnly ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN ISOLATION LEVEL READ COMMITTED", logger: logger)
            do {
                switch try await body(connection) {
                case .commit(let value):
                    try await connection.query("COMMIT", logger: logger)
                    return value
                case .rollback(let value):
                    try await connection.query("ROLLBACK", logger: logger)
                    return value
                }
            } catch {
                // Never a query on a closed connection: postgres-nio would never answer it.
                if !connection.isClosed { _ = try? await connection.query("ROLLBACK", logger: logger) }
                throw error
            }
        }
    }

    /// Runs `body` on a connection of the pool within the request deadline, mapping PostgreSQL's
    /// transient failures to `TRY_AGAIN_LATER`.
    private func onConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let pool = self.pool
        return try await PostgresFailure.map {
            try await StoreTransactionRunner(deadline: self.requestDeadline).run(unreachable: "the database did not answer in time") { abandonment in
                try await pool.withConnection(abandonment, body)
            }
        }
    }
}

/// One PostgreSQL transaction's connection.
struct PostgresStoreConnection: StoreConnection {
    let connection: PostgresConnection
    let logger: Logger

    var dialect: any SQLDialect { PostgresDialect() }

    func rows(_ sql: String, _ arguments: [SQLValue]) async throws -> [StoreRow] {
        return try await received(sql, arguments).map(PostgresStoreConnection.row)
    }

    /// The statement's rows, all received on the connection's event loop before the caller resumes.
    /// postgres-nio's async row sequence hands rows over in batches under back-pressure, each a
    /// hop between the event loop and the caller's thread; here there is one hop a statement. The
    /// store's reads are bounded by their `LIMIT` (a page), so holding a statement's rows costs little.
    private func received(_ sql: String, _ arguments: [SQLValue]) async throws -> [PostgresRow] {
        var bindings = PostgresBindings(capacity: arguments.count)
        for argument in arguments { try PostgresStoreConnection.bind(argument, to: &bindings) }
        let query = PostgresQuery(unsafeSQL: dialect.placeholders(sql), binds: bindings)
        let rows = ReceivedRows()
        _ = try await connection.query(query, logger: logger) { row in rows.list.withLock { $0.append(row) } }.get()
        return rows.list.withLock { $0 }
    }

    func forEachRow(_ sql: String, _ arguments: [SQLValue], _ row: (any StoreCursor) throws -> Void) async throws {
        var cells: [PostgresCell] = []
        var pointers: [UnsafeRawBufferPointer?] = []
        for received in try await received(sql, arguments) {
            cells.removeAll(keepingCapacity: true)
            pointers.removeAll(keepingCapacity: true)
            for cell in received { cells.append(cell) }
            try PostgresCursor.withBytes(cells[...], &pointers) { try row(PostgresCursor(cells: cells, bytes: $0)) }
        }
    }

    /// The protocol's changed count is not in postgres-nio's async interface: a data-changing
    /// statement without its own `RETURNING` is counted by a `WITH` around it.
    func execute(_ sql: String, _ arguments: [SQLValue]) async throws -> Int {
        let verb = sql.drop(while: \.isWhitespace).prefix(6).uppercased()
        guard ["INSERT", "UPDATE", "DELETE"].contains(verb), sql.range(of: "RETURNING", options: .caseInsensitive) == nil else {
            return try await rows(sql, arguments).count
        }
        return Int(try await rows("WITH changed AS (\(sql) RETURNING 1) SELECT COUNT(*) FROM changed", arguments).first?.int(0) ?? 0)
    }

    /// One statement: each column bound as one array (`unnest($1::bigint[], $2::text[], …)`).
    func insertRows(into table: String, columns: [StoreColumn], rows: [[SQLValue]], suffix: String) async throws -> [StoreRow] {
        guard !rows.isEmpty, !columns.isEmpty else { return [] }
        let arrays = columns.indices.map { index in
            SQLValue.text(PostgresStoreConnection.arrayLiteral(rows.map { $0[index] }))
        }
        let unnest = columns.map { "?::\($0.type.rawValue)[]" }.joined(separator: ", ")
        let names = columns.map(\.name).joined(separator: ", ")
        let sql = "INSERT INTO \(table) (\(names)) SELECT * FROM unnest(\(unnest))" + (suffix.isEmpty ? "" : " " + suffix)
        return try await self.rows(sql, arrays)
    }

    /// PostgreSQL's text form of an array: `{1,NULL,"a \"b\""}` (bytes as `\x…` hex). Built as
    /// UTF-8 bytes: a batch's columns are hundreds of kilobytes, and appending them to a `String`
    /// a character at a time took a third of the CPU of a PostgreSQL bulk load in a profile.
    /// Quotes and backslashes are ASCII, so escaping the UTF-8 bytes escapes the characters.
    static func arrayLiteral(_ values: [SQLValue]) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(values.count * 16)
        bytes.append(UInt8(ascii: "{"))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            switch value {
            case .null: bytes.append(contentsOf: "NULL".utf8)
            case .int(let number): bytes.append(contentsOf: String(number).utf8)
            case .double(let number): quote(String(number).utf8, into: &bytes)
            case .text(let string): quote(string.utf8, into: &bytes)
            case .blob(let data):
                bytes.append(contentsOf: #""\\x"#.utf8)
                for byte in data {
                    bytes.append(hexDigits[Int(byte >> 4)])
                    bytes.append(hexDigits[Int(byte & 0x0F)])
                }
                bytes.append(UInt8(ascii: "\""))
            }
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func quote(_ utf8: String.UTF8View, into bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in utf8 {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
            bytes.append(byte)
        }
        bytes.append(UInt8(ascii: "\""))
    }

    static func bind(_ value: SQLValue, to bindings: inout PostgresBindings) throws {
        switch value {
        case .null: bindings.appendNull()
        case .int(let number): bindings.append(number)
        case .double(let number): bindings.append(number)
        case .text(let string): bindings.append(string)
        case .blob(let bytes): bindings.append(ByteBuffer(bytes: bytes))
        }
    }

    static func row(_ row: PostgresRow) throws -> StoreRow {
        var values: [SQLValue] = []
        for cell in row {
            guard var bytes = cell.bytes else {
                values.append(.null)
                continue
            }
            switch cell.dataType {
            case .int2, .int4, .int8: values.append(.int(try cell.decode(Int64.self)))
            case .float4, .float8: values.append(.double(try cell.decode(Double.self)))
            case .bool: values.append(.int(try cell.decode(Bool.self) ? 1 : 0))
            case .bytea: values.append(.blob(bytes.readBytes(length: bytes.readableBytes) ?? []))
            case .numeric: values.append(.int(Int64(try cell.decode(String.self)) ?? 0))
            default:
                if let text = try? cell.decode(String.self) {
                    values.append(.text(text))
                } else {
                    values.append(.text(bytes.readString(length: bytes.readableBytes) ?? ""))
                }
            }
        }
        return StoreRow(values)
    }
}

/// The rows of one statement, appended on the connection's event loop.
private final class ReceivedRows: Sendable {
    let list = Mutex<[PostgresRow]>([])
}

/// A row postgres-nio received, its columns' bytes borrowed from its buffers (text columns are
/// their UTF-8 in either format).
struct PostgresCursor: StoreCursor {
    let cells: [PostgresCell]
    let bytes: [UnsafeRawBufferPointer?]

    func isNull(_ column: Int) -> Bool { bytes[column] == nil }

    func int(_ column: Int) -> Int64 {
        let cell = cells[column]
        switch cell.dataType {
        case .bool: return (try? cell.decode(Bool.self)) == true ? 1 : 0
        case .int2, .int4, .int8: return (try? cell.decode(Int64.self)) ?? 0
        default: return Int64((try? cell.decode(String.self)) ?? "") ?? 0
        }
    }

    func bytes(_ column: Int) -> UnsafeRawBufferPointer? { bytes[column] }

    /// Each cell's readable bytes (nil for NULL), all valid at once for the time of `body`.
    static func withBytes<T>(_ cells: ArraySlice<PostgresCell>, _ pointers: inout [UnsafeRawBufferPointer?],
                             _ body: ([UnsafeRawBufferPointer?]) throws -> T) throws -> T
    {
        guard let first = cells.first else { return try body(pointers) }
        guard let buffer = first.bytes else {
            pointers.append(nil)
            return try withBytes(cells.dropFirst(), &pointers, body)
        }
        return try buffer.withUnsafeReadableBytes { bytes in
            pointers.append(bytes)
            return try withBytes(cells.dropFirst(), &pointers, body)
        }
    }
}
