import RecordStore
import SQLiteDB

/// One SQLite transaction's connection.
struct SQLiteStoreConnection: StoreConnection {
    let connection: SQLiteConnection

    /// The most parameters one statement binds (SQLite's default limit since 3.32).
    static let maximumParameters = 32_766
    /// The most rows one multi-row insert carries.
    static let maximumRowsPerInsert = 512

    var dialect: any SQLDialect { SQLiteDialect() }

    func rows(_ sql: String, _ arguments: [SQLValue]) async throws -> [StoreRow] {
        try connection.map(sql, arguments.map(\.sqlite)) { statement in
            let count = statement.columnCount
            var values: [SQLValue] = []
            values.reserveCapacity(Int(count))
            for column in 0..<count { values.append(SQLValue(statement.value(column))) }
            return StoreRow(values)
        }
    }

    func forEachRow(_ sql: String, _ arguments: [SQLValue], _ row: (any StoreCursor) throws -> Void) async throws {
        try connection.query(sql, arguments.map(\.sqlite)) { try row(SQLiteCursor(statement: $0)) }
    }

    func execute(_ sql: String, _ arguments: [SQLValue]) async throws -> Int { try connection.run(sql, arguments.map(\.sqlite)) }

    /// Full statements of `rowsPerStatement` rows, the rest in halving pieces (256, 128, … 1 rows),
    /// so a table's inserts are a handful of cached statements whatever the batch's size.
    func insertRows(into table: String, columns: [StoreColumn], rows: [[SQLValue]], suffix: String) async throws -> [StoreRow] {
        guard !columns.isEmpty else { return [] }
        let rowsPerStatement = max(1, min(Self.maximumRowsPerInsert, Self.maximumParameters / columns.count))
        var returned: [StoreRow] = []
        var start = 0
        while start < rows.count {
            var count = min(rowsPerStatement, rows.count - start)
            if count < rowsPerStatement {
                var piece = 1
                while piece * 2 <= count { piece *= 2 }
                count = piece
            }
            let sql = Self.insertStatement(table: table, columns: columns, rowCount: count, suffix: suffix)
            var arguments: [SQLValue] = []
            arguments.reserveCapacity(count * columns.count)
            for row in rows[start..<(start + count)] { arguments.append(contentsOf: row) }
            returned += try await self.rows(sql, arguments)
            start += count
        }
        return returned
    }

    static func insertStatement(table: String, columns: [StoreColumn], rowCount: Int, suffix: String) -> String {
        let tuple = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        let values = Array(repeating: tuple, count: rowCount).joined(separator: ", ")
        let names = columns.map(\.name).joined(separator: ", ")
        return "INSERT INTO \(table) (\(names)) VALUES \(values)" + (suffix.isEmpty ? "" : " " + suffix)
    }
}

/// A row of a SQLite statement, read where SQLite holds it.
struct SQLiteCursor: StoreCursor {
    let statement: SQLiteStatement

    func isNull(_ column: Int) -> Bool { statement.isNull(Int32(column)) }
    func int(_ column: Int) -> Int64 { statement.int64(Int32(column)) }
    func bytes(_ column: Int) -> UnsafeRawBufferPointer? { statement.optionalBytes(Int32(column)) }
}
