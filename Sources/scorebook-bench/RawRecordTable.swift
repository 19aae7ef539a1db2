import Foundation
import RecordModel
import RecordStore
import SQLiteDB

/// The ceiling's table: the store's own `records` table and indexes (`StoreSchema.recordsTable`), the same WAL
/// and fsync settings, one transaction per 400 rows, straight through the SQLite C API.
final class RawRecordTable {
    let directory: String
    let connection: SQLiteConnection
    private let insert: SQLiteStatement
    private var sequence = 0

    init(name: String) throws {
        directory = temporaryDirectory(name)
        connection = try SQLiteConnection(path: directory + "/raw.sqlite", synchronous: .full)
        for statement in StoreSchema.recordsTable { try connection.execute(statement) }
        insert = try connection.statement(
            "INSERT INTO records (zone_id, name, type, tag, seq, deleted, fields, parent, created_at, created_by, created_device, modified_at, modified_by, modified_device) VALUES (1, ?, 'Bench', ?, ?, 0, ?, NULL, ?, '_user', NULL, ?, '_user', NULL)")
    }

    /// The rows of `benchRecord(index)` as the store keeps them: name and fields JSON.
    static func rows(_ range: Range<Int>) -> [(name: String, fields: [UInt8])] {
        range.map { index in
            let record = try! Record(requestJSON: benchRecord(index), schemaType: { _, _ in nil })
            return (record.recordName, record.fieldsJSONBytes())
        }
    }

    /// Inserts all rows, 400 to a transaction; returns the seconds it took.
    func insertAll(_ rows: [(name: String, fields: [UInt8])]) throws -> Double {
        let start = now()
        var index = 0
        while index < rows.count {
            try insert(rows[index..<min(index + batchSize, rows.count)])
            index += batchSize
        }
        return now() - start
    }

    /// One transaction of rows.
    func insert(_ rows: ArraySlice<(name: String, fields: [UInt8])>) throws {
        try connection.execute("BEGIN IMMEDIATE")
        for row in rows {
            sequence += 1
            try insert.bind([.text(row.name), .text("1-\(sequence)"), .int(Int64(sequence)), .blob(row.fields), .int(1), .int(1)])
            _ = try insert.step()
        }
        insert.reset()
        try connection.execute("COMMIT")
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
