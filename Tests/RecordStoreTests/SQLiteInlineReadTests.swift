import Foundation
import RecordModel
import RecordStore
import SQLiteDB
import SQLiteRecordStore
import Synchronization
import XCTest

/// A SQLite read by key (a request's credentials) runs on its caller's thread while the caller is
/// on Swift's shared threads and a slot is free; otherwise, like every other read, on the store's
/// reader threads. Either way it is answered at its deadline: an inline read's statement is
/// interrupted then, and the connection it used reads normally afterwards.
final class SQLiteInlineReadTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("inline-read-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func driver(deadline: Duration = .seconds(10), inlineReadLimit: Int = 1) throws -> SQLiteStoreDriver {
        // One idle reader: the read after an interrupted one gets the same connection back.
        let database = try SQLiteDatabase(path: directory.appendingPathComponent("store.sqlite").path, maximumIdleReaders: 1)
        return SQLiteStoreDriver(database: database, requestDeadline: deadline, inlineReadLimit: inlineReadLimit)
    }

    func testAReadRunsOnItsCallersThreadWhileASlotIsFreeAndOnTheReadersOtherwise() async throws {
        let driver = try driver(inlineReadLimit: 1)

        // A task on Swift's shared threads: the read runs where its caller is.
        let first = try await Task.detached { try await readOne(driver) }.value
        XCTAssertEqual(first.value, 1)
        XCTAssertEqual(first.thread, first.caller, "the read ran on its caller's thread")
        XCTAssertEqual(driver.inlineReadsRun, 1)

        // The one slot held by a read that waits: the next read goes to the readers' threads.
        let held = AsyncStream<Void>.makeStream()
        let started = AsyncStream<Void>.makeStream()
        let holder = Task.detached {
            try await driver.readByKey { _ in
                started.continuation.yield()
                for await _ in held.stream { break }
                return 0
            }
        }
        for await _ in started.stream { break }
        XCTAssertEqual(driver.inlineReadsRun, 2, "the holding read ran inline")
        let second = try await Task.detached { try await readOne(driver) }.value
        XCTAssertEqual(second.value, 1)
        XCTAssertEqual(driver.inlineReadsRun, 2, "with no slot free the read ran on the readers' threads")
        held.continuation.yield()
        _ = try await holder.value

        // From a task of the store's own threads (as the group-commit writer's), never inline.
        let executor = ThreadPoolTaskExecutor(threads: 1)
        let pooled = try await Task(executorPreference: executor) { try await readOne(driver) }.value
        XCTAssertEqual(pooled.value, 1)
        XCTAssertEqual(driver.inlineReadsRun, 2, "a read from the store's own threads ran on the readers'")
        await executor.shutdown()

        // The slot is free again.
        _ = try await Task.detached { try await readOne(driver) }.value
        XCTAssertEqual(driver.inlineReadsRun, 3)

        // Other reads (pages, transactions) always run on the readers' threads.
        let others = try await Task.detached {
            let caller = currentThread()
            let inTransaction = try await driver.read { _ in currentThread() }
            let statement = try await driver.readStatement { _ in currentThread() }
            return [caller, inTransaction, statement]
        }.value
        XCTAssertNotEqual(others[1], others[0], "a read transaction ran on the readers' threads")
        XCTAssertNotEqual(others[2], others[0], "a one-statement read ran on the readers' threads")
        XCTAssertEqual(driver.inlineReadsRun, 3)
    }

    func testWithNoSlotsEveryReadRunsOnTheReaders() async throws {
        let driver = try driver(inlineReadLimit: 0)
        let answer = try await Task.detached { try await readOne(driver) }.value
        XCTAssertEqual(answer.value, 1)
        XCTAssertNotEqual(answer.thread, answer.caller)
        XCTAssertEqual(driver.inlineReadsRun, 0)
    }

    func testAnInlineReadPastItsDeadlineIsInterruptedAndAnsweredTryAgainLater() async throws {
        let driver = try driver(deadline: .milliseconds(300), inlineReadLimit: 1)
        let started = ContinuousClock.now
        do {
            // Counts for tens of seconds unless stopped.
            _ = try await Task.detached {
                try await driver.readByKey { connection in
                    try await connection.rows("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000000) SELECT count(*) FROM c", [])
                }
            }.value
            XCTFail("a read past its deadline answered")
        } catch let error as ServerError {
            XCTAssertEqual(error.code, .tryAgainLater, "\(error)")
        }
        let waited = ContinuousClock.now - started
        XCTAssertLessThan(waited, .seconds(5), "answered at its deadline")
        XCTAssertGreaterThanOrEqual(waited, .milliseconds(250), "not before it")
        XCTAssertEqual(driver.inlineReadsRun, 1, "the long read ran inline")

        // The same connection reads normally afterwards: the interrupt did not outlive its read.
        for _ in 0..<3 {
            let answer = try await Task.detached { try await readOne(driver) }.value
            XCTAssertEqual(answer.value, 1)
        }
        XCTAssertEqual(driver.inlineReadsRun, 4)
    }
}

private func currentThread() -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(bitPattern: UInt(pthread_self())))) }

/// What a read of `SELECT 1` answered, on which thread, and from which thread it was called.
private struct Answer: Sendable {
    var value: Int64
    var thread: UInt
    var caller: UInt = 0
}

private func readOne(_ driver: SQLiteStoreDriver) async throws -> Answer {
    let caller = currentThread()
    var answer = try await driver.readByKey { connection in
        let rows = try await connection.rows("SELECT 1", [])
        return Answer(value: rows[0].int(0), thread: currentThread())
    }
    answer.caller = caller
    return answer
}
