import Foundation
import SQLiteDB
import XCTest

/// SQLite as the store configures it for many threads.
final class SQLiteConfigurationTests: XCTestCase {
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
}
