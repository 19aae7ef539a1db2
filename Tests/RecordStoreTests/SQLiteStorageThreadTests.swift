import Foundation
import RecordModel
import RecordStore
import SQLiteDB
import XCTest

/// Issue 16: SQLite's blocking calls run on bounded thread pools, never on Swift's cooperative
/// pool. While another process holds the write lock, many writes (the tombstone purger's among
/// them) wait: at most `SQLiteStorage.writeThreads` threads block in SQLite, reads still answer,
/// and async work still runs.
final class SQLiteStorageThreadTests: XCTestCase {
    func testBlockedWritesHoldABoundedNumberOfThreadsAndNothingOfTheCooperativePool() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-threads-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let sqlite = try SQLiteRecordStore(directory: directory.path)
        sqlite.setBusyTimeout(milliseconds: 30_000)
        let storage = SQLiteStorage(sqlite)
        defer { sqlite.close() }
        let user = try BlockingStore(storage).createUser(name: "ann").user

        // Another connection (as a `scorebookd user` command or an sqlite3 shell would) takes the write lock.
        let other = try SQLiteConnection(path: sqlite.path)
        try other.execute("BEGIN IMMEDIATE")
        var released = false
        defer { if !released { try? other.execute("ROLLBACK") } }

        let writers = 24
        let finished = DispatchSemaphore(value: 0)
        for index in 0..<writers {
            Task.detached {
                if index % 2 == 0 {
                    // A write still run on the storage's own write threads (purging is the engine's now).
                    _ = try? await storage.deleteZone(DatabaseScope(user: user, container: "iCloud.threads", environment: .development),
                                                      zoneName: "Absent")
                } else {
                    _ = try? await storage.createAPIToken()
                }
                finished.signal()
            }
        }
        // The pool fills: exactly its threads block in SQLite, the other writes wait in its queue.
        var inStore = 0
        for _ in 0..<250 {
            inStore = SQLiteStorage.threadsInStore.load(ordering: .relaxed)
            if inStore >= SQLiteStorage.writeThreads { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTAssertEqual(inStore, SQLiteStorage.writeThreads)
        for _ in 0..<10 {
            Thread.sleep(forTimeInterval: 0.02)
            XCTAssertLessThanOrEqual(SQLiteStorage.threadsInStore.load(ordering: .relaxed), SQLiteStorage.writeThreads)
        }

        // Async work and reads go on meanwhile (with the cooperative pool blocked they could not).
        let probe = DispatchSemaphore(value: 0)
        Task.detached {
            let zones = try? await storage.listUsers()
            if zones?.count == 1 { probe.signal() }
        }
        XCTAssertEqual(probe.wait(timeout: .now() + 10), .success, "a read answered while every write waited")
        _ = user

        try other.execute("ROLLBACK")
        released = true
        for _ in 0..<writers { XCTAssertEqual(finished.wait(timeout: .now() + 30), .success, "every write ends once the lock is free") }
        XCTAssertEqual(SQLiteStorage.threadsInStore.load(ordering: .relaxed), 0)
    }
}
