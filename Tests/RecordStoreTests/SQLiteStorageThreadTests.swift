import Foundation
import RecordModel
import RecordStore
import SQLiteDB
import SQLiteRecordStore
import XCTest

/// SQLite's blocking calls run on the store's own threads, never on Swift's cooperative pool
/// (except a bounded number of reads by key at once: `SQLiteInlineReadTests`).
/// While another process holds the write lock, many writes wait: they queue to the group-commit
/// writer's one thread instead of each taking a thread, reads still answer, async work still
/// runs, and every write ends once the lock is free. Closing the store ends its writer's thread.
final class SQLiteStorageThreadTests: XCTestCase {
    func testBlockedWritesQueueOnTheWriterAndNothingOfTheCooperativePool() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-threads-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let sqlite = try SQLiteRecordStore(directory: directory.path)
        sqlite.setBusyTimeout(milliseconds: 30_000)
        let storage = SQLiteStorage(sqlite)
        defer { sqlite.close() }
        let blocking = BlockingStore(storage)
        let user = try blocking.createUser(name: "ann").user
        let scope = DatabaseScope(user: user, container: "iCloud.threads", environment: .development)
        // Every pool this test touches is started before the threads are counted.
        _ = try blocking.createZone(scope, zoneName: "Warm")
        _ = try blocking.listUsers()
        let threadsBefore = Self.threadCount()

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
                    _ = try? await storage.createZone(scope, zoneName: "Zone\(index)")
                } else {
                    _ = try? await storage.createAPIToken()
                }
                finished.signal()
            }
        }
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(finished.wait(timeout: .now()), .timedOut, "no write got past the lock another connection holds")
        // A thread per waiting write would show here; the writer's one thread was counted before.
        XCTAssertLessThanOrEqual(Self.threadCount(), threadsBefore + 2, "blocked writes took threads of their own")

        // Async work and reads go on meanwhile (with the cooperative pool blocked they could not).
        let probe = DispatchSemaphore(value: 0)
        Task.detached {
            let users = try? await storage.listUsers()
            if users?.count == 1 { probe.signal() }
        }
        XCTAssertEqual(probe.wait(timeout: .now() + 10), .success, "a read answered while every write waited")

        try other.execute("ROLLBACK")
        released = true
        for _ in 0..<writers { XCTAssertEqual(finished.wait(timeout: .now() + 30), .success, "every write ends once the lock is free") }
        XCTAssertEqual(try blocking.listZones(scope).count, 2 + writers / 2, "the default zone, the warm-up zone and every zone created")
    }

    /// `close()` ends every thread the store started: the group-commit writer's thread goes with
    /// it (the readers' threads are the process's, started once for every store), and a write
    /// after it is refused instead of starting the writer again.
    func testClosingTheStoreEndsItsWriterThread() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-close-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // Every pool this test touches is started before the threads are counted.
        let warm = SQLiteStorage(try SQLiteRecordStore(directory: directory.appendingPathComponent("warm").path))
        _ = try await warm.createUser(name: "warm")
        _ = try await warm.listUsers()
        await warm.close()
        let threadsBefore = Self.poolThreadCount()

        let storage = SQLiteStorage(try SQLiteRecordStore(directory: directory.appendingPathComponent("store").path))
        _ = try await storage.createUser(name: "ann")
        XCTAssertEqual(Self.poolThreadCount(), threadsBefore + 1, "an open store writes on a thread of its own")
        await storage.close()
        XCTAssertEqual(Self.poolThreadCount(), threadsBefore, "a closed store leaves no thread of its own behind")
        do {
            _ = try await storage.createUser(name: "bob")
            XCTFail("a closed store took a write")
        } catch let error as ServerError {
            XCTAssertEqual(error.code, .tryAgainLater)
        }
        XCTAssertEqual(Self.poolThreadCount(), threadsBefore, "a refused write starts no thread")
    }

    /// The process's threads, from Linux's `/proc`.
    static func threadCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }

    /// The process's threads of `NIOThreadPool`s (named `TP-#n`: the stores' readers and writers).
    static func poolThreadCount() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            return name.hasPrefix("TP-#")
        }.count
    }
}
