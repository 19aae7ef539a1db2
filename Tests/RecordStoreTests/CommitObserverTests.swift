import Foundation
import RecordStore
import SQLiteDB
import SQLiteRecordStore
import Synchronization
import XCTest

/// The push hub hears of every commit through the engine's commit observer, once a write: a
/// daemon's millionth commit must cost what its first did.
final class CommitObserverTests: XCTestCase {
    /// Telling the observer must not leave anything behind: a closure kept as a generic
    /// container's value used to be rewrapped at every read, so each commit deepened the chain of
    /// calls the next one walked. On a thread with a small stack, tens of thousands of commits
    /// would then overflow it; now each call is one frame deep.
    func testTheObserverIsToldOfManyCommitsOnASmallStack() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("observer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try SQLiteDatabase(path: directory.appendingPathComponent("store.sqlite").path)
        let engine = StoreEngine(driver: SQLiteStoreDriver(database: database), storeID: "observer-test", clock: { 0 })
        let told = Mutex<(count: Int, databases: Set<Int64>)>((0, []))
        engine.setCommitObserver { ids in told.withLock { $0.count += 1; $0.databases.formUnion(ids) } }

        let commits = 20_000
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            for index in 0..<commits { engine.committed([Int64(index % 3)]) }
            finished.signal()
        }
        thread.stackSize = 256 * 1024
        thread.start()
        XCTAssertEqual(finished.wait(timeout: .now() + 120), .success, "the commits finished")
        let result = told.withLock { $0 }
        XCTAssertEqual(result.count, commits, "the observer heard every commit")
        XCTAssertEqual(result.databases, [0, 1, 2])
        engine.committed([])
        XCTAssertEqual(told.withLock { $0.count }, commits, "a write that changed nothing is not announced")
    }
}
