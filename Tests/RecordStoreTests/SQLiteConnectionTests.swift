import Foundation
import SQLiteDB
import XCTest

/// SQLite as the store configures and reads it.
final class SQLiteConnectionTests: XCTestCase {
    /// Allocation statistics are off before the first connection opens: with them on, every
    /// allocation of every reader and the writer takes one process-wide mutex.
    func testConnectionsDoNotCountAllocationsUnderAProcessWideLock() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let connection = try SQLiteConnection(path: directory.appendingPathComponent("config.sqlite").path)
        try connection.execute("CREATE TABLE t (x TEXT); INSERT INTO t VALUES (hex(randomblob(5000)))")
        XCTAssertFalse(SQLiteConnection.countsAllocations)
    }

    /// A column read in place tells NULL from empty text and an empty blob, and hands the bytes of
    /// the others (the type is asked only when SQLite gives no pointer).
    func testColumnsReadInPlaceTellNullFromEmpty() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        var read: [[UInt8]?] = []
        try connection.query("SELECT NULL, '', x'', 'abc', x'00ff', 7", []) { row in
            for column in Int32(0)..<6 { read.append(row.optionalBytes(column).map { Array($0) }) }
        }
        XCTAssertEqual(read, [nil, [], [], Array("abc".utf8), [0, 255], Array("7".utf8)])
    }
}
