import Foundation
import RecordModel
@testable import RecordStore
@testable import SQLiteRecordStore
import SQLiteDB
import XCTest

/// The SQLite store on a full disk (the database file capped at its current size with
/// `max_page_count`, which fails writes with SQLITE_FULL as a full file system does): writes
/// answer `TRY_AGAIN_LATER` naming the cause, reads and the change feed go on, nothing
/// acknowledged is lost, writes resume when space returns, and the file passes
/// `PRAGMA integrity_check`.
final class FullDiskTests: StoreTestCase {
    override func setUpWithError() throws {
        if Self.backend == .postgres { throw XCTSkip("a full disk is the SQLite store's own condition") }
        try super.setUpWithError()
    }

    var database: SQLiteDatabase { (store.base as! SQLiteStorage).store.database }

    func bigRecord(_ name: String) -> JSONValue {
        record(name, "Note", ["text": field(.string(String(repeating: "x", count: 20_000)))])
    }

    func testAFullDiskRefusesWritesAsTryAgainLaterKeepsReadsAndLosesNothing() throws {
        var acknowledged: [String] = []
        for index in 0..<5 {
            try save(dev, bigRecord("before-\(index)"))
            acknowledged.append("before-\(index)")
        }
        let pages = try database.writeSync { try $0.scalarInt("PRAGMA page_count") } ?? 0
        XCTAssertGreaterThan(pages, 0)
        _ = try database.writeSync { try $0.scalarInt("PRAGMA max_page_count = \(pages)") }

        var refusals = 0
        for index in 0..<20 {
            do {
                try modify(dev, [(.create, bigRecord("full-\(index)"))])
                acknowledged.append("full-\(index)")  // fitted in a page freed earlier
            } catch {
                let answer = ServerError(storeFailure: error)
                XCTAssertEqual(answer.code, .tryAgainLater, "\(error)")
                XCTAssertTrue(answer.reason.contains("disk full"), answer.reason)
                XCTAssertNotNil(answer.retryAfter)
                refusals += 1
            }
        }
        XCTAssertGreaterThan(refusals, 0, "the capped file refused writes")
        // Reads and the change feed go on.
        for name in acknowledged { XCTAssertNotNil(try lookup(dev, name), name) }
        let feed = try fetchChanges(dev)
        XCTAssertEqual(Set(feed.state.keys), Set(acknowledged))

        // Space returns: writes resume, nothing acknowledged is lost, the file is sound.
        _ = try database.writeSync { try $0.scalarInt("PRAGMA max_page_count = 1073741823") }
        try save(dev, bigRecord("after"))
        acknowledged.append("after")
        try reopenStore()
        for name in acknowledged { XCTAssertNotNil(try lookup(dev, name), name) }
        let check = try (store.base as! SQLiteStorage).store.database.readSync { connection in
            try connection.map("PRAGMA integrity_check") { $0.text(0) }
        }
        XCTAssertEqual(check, ["ok"])
    }
}
