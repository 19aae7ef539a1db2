import Foundation
import NIOCore
import NIOPosix
import RecordModel
import RecordStore
import Synchronization
import XCTest

/// `StoreTransactionRunner`: the caller is answered by the transaction, or `TRY_AGAIN_LATER` at
/// the deadline, at its own cancellation or at an interruption, and never waits for work that
/// does not end; abandoned work gets its cleanups run.
final class StoreTransactionRunnerTests: XCTestCase {
    /// Work that ends only when the test lets it (or never, like a query on a dead connection).
    final class Gate: Sendable {
        private let stream: AsyncStream<Void>
        private let continuation: AsyncStream<Void>.Continuation

        init() { (stream, continuation) = AsyncStream.makeStream() }

        func wait() async { for await _ in stream {} }
        func open() { continuation.finish() }
    }

    final class Flag: Sendable {
        private let value = Atomic<Int>(0)
        func raise() { value.add(1, ordering: .relaxed) }
        var count: Int { value.load(ordering: .relaxed) }
    }

    func assertTryAgainLater(_ body: () async throws -> Void, file: StaticString = #filePath, line: UInt = #line) async -> ServerError? {
        do {
            try await body()
            XCTFail("expected TRY_AGAIN_LATER", file: file, line: line)
        } catch let error as ServerError {
            XCTAssertEqual(error.code, .tryAgainLater, file: file, line: line)
            XCTAssertNotNil(error.retryAfter, file: file, line: line)
            return error
        } catch {
            XCTFail("expected a ServerError, got \(error)", file: file, line: line)
        }
        return nil
    }

    func testTheTransactionsOwnResultIsReturnedAndNothingIsAbandoned() async throws {
        let cleaned = Flag()
        let value = try await StoreTransactionRunner(deadline: .seconds(60)).run { abandonment in
            abandonment.onAbandon { cleaned.raise() }
            return 42
        }
        XCTAssertEqual(value, 42)
        XCTAssertEqual(cleaned.count, 0)
    }

    /// Something a transaction's body holds, whose release the test can see.
    final class Captured: Sendable {}

    /// A transaction that ended keeps nothing alive: its task, and with it what its body
    /// captured, is freed. Every store call of a long-running daemon goes through here; a task
    /// kept per call grew the daemon by about 8 KB a request, for good.
    func testAnEndedTransactionReleasesItsTaskAndWhatItsBodyHeld() async throws {
        let runner = StoreTransactionRunner(deadline: .seconds(60))
        weak var answered: Captured?
        weak var failed: Captured?
        let abandonments = Mutex<[Weak<TransactionAbandonment>]>([])
        do {
            let held = Captured()
            answered = held
            _ = try await runner.run { abandonment in
                abandonments.withLock { $0.append(Weak(abandonment)) }
                return withExtendedLifetime(held) { 1 }
            }
            let other = Captured()
            failed = other
            _ = try? await runner.run { _ -> Int in
                withExtendedLifetime(other) {}
                throw ServerError(.notFound, "gone")
            }
        }
        // The task ends just after it answered: give it a moment (bounded).
        func released() -> Bool { answered == nil && failed == nil && abandonments.withLock { $0.allSatisfy { $0.value == nil } } }
        for _ in 0..<200 where !released() { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertNil(answered, "the transaction's task still holds its body")
        XCTAssertNil(failed, "a failed transaction's task still holds its body")
        XCTAssertTrue(abandonments.withLock { $0.allSatisfy { $0.value == nil } }, "the abandonment (and its race) outlived the answer")
    }

    final class Weak<T: AnyObject & Sendable>: Sendable {
        weak let value: T?
        init(_ value: T) { self.value = value }
    }

    func testWorkThatNeverEndsIsAbandonedAtTheDeadlineAndItsCleanupRuns() async throws {
        let gate = Gate()
        let cleaned = Flag()
        let abandonedBefore = StoreTransactionRunner.abandonedTotal.load(ordering: .relaxed)
        let error = await assertTryAgainLater {
            _ = try await StoreTransactionRunner(deadline: .milliseconds(50)).run(unreachable: "the test store did not answer") { abandonment in
                abandonment.onAbandon { cleaned.raise() }
                await gate.wait()  // does not honour cancellation
                return 1
            }
        }
        XCTAssertEqual(error?.reason.hasPrefix("the test store did not answer"), true)
        XCTAssertEqual(cleaned.count, 1, "the abandoned work's cleanup ran")
        XCTAssertGreaterThan(StoreTransactionRunner.abandonedTotal.load(ordering: .relaxed), abandonedBefore)
        gate.open()
    }

    func testCancellingTheCallerAnswersAtOnceAndAbandonsTheWork() async throws {
        let gate = Gate()
        let cleaned = Flag()
        let started = Gate()
        let caller = Task {
            try await StoreTransactionRunner(deadline: .seconds(3600)).run { abandonment in
                abandonment.onAbandon { cleaned.raise() }
                started.open()
                await gate.wait()
                return 1
            }
        }
        await started.wait()
        caller.cancel()
        _ = await assertTryAgainLater { _ = try await caller.value }
        XCTAssertEqual(cleaned.count, 1)
        gate.open()
    }

    func testAnInterruptionAnswersItsErrorWithoutWaitingForTheWork() async throws {
        let gate = Gate()
        let cleaned = Flag()
        let error = await assertTryAgainLater {
            _ = try await StoreTransactionRunner(deadline: .seconds(3600)).run { abandonment in
                abandonment.onAbandon { cleaned.raise() }
                abandonment.interrupt(ServerError(.tryAgainLater, "the connection closed", retryAfter: 1))
                await gate.wait()
                return 1
            }
        }
        XCTAssertEqual(error?.reason, "the connection closed")
        XCTAssertEqual(cleaned.count, 1)
        gate.open()
    }

    func testACleanupRegisteredAfterAbandonmentRunsAtOnce() async throws {
        let gate = Gate()
        let registeredLate = Flag()
        let abandoned = Gate()
        _ = await assertTryAgainLater {
            _ = try await StoreTransactionRunner(deadline: .milliseconds(20)).run { abandonment in
                abandonment.onAbandon { abandoned.open() }
                await gate.wait()
                // A resource taken after the runner gave up (a connection that opened late).
                abandonment.onAbandon { registeredLate.raise() }
                return 1
            }
        }
        await abandoned.wait()
        gate.open()
        for _ in 0..<200 where registeredLate.count == 0 { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertEqual(registeredLate.count, 1)
    }

    // MARK: The deadlines' one timer

    /// A short deadline added while a long one is watched is not kept waiting for the long one's
    /// timer: it takes the timer's place.
    func testAShortDeadlineAddedAfterALongOneIsMetOnTime() async throws {
        let deadlines = TransactionDeadlines(loop: MultiThreadedEventLoopGroup.singleton.next())
        let gate = Gate(), shortGate = Gate()
        let long = Task {
            try await StoreTransactionRunner(deadline: .seconds(3600), deadlines: deadlines).run { _ in
                await gate.wait()
                return 1
            }
        }
        for _ in 0..<200 where deadlines.count == 0 { try await Task.sleep(for: .milliseconds(5)) }
        XCTAssertEqual(deadlines.count, 1, "the long transaction's deadline is watched")
        let started = ContinuousClock.now
        _ = await assertTryAgainLater {
            _ = try await StoreTransactionRunner(deadline: .milliseconds(50), deadlines: deadlines).run { _ in
                await shortGate.wait()
                return 1
            }
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2), "answered at its own deadline, not the long one's")
        XCTAssertEqual(deadlines.count, 1, "the short deadline fired and left; the long one is still watched")
        gate.open()
        shortGate.open()
        let longValue = try await long.value
        XCTAssertEqual(longValue, 1)
        XCTAssertEqual(deadlines.count, 0, "an ended transaction's deadline is forgotten")
    }

    /// Each deadline fires once, when due, in any order of adding; one taken out never fires; and
    /// the timer goes on after a stretch with nothing to watch.
    func testEachDeadlineFiresOnceWhenDueAndARemovedOneNever() async throws {
        let deadlines = TransactionDeadlines(loop: MultiThreadedEventLoopGroup.singleton.next())
        let fired = Mutex<[String]>([])
        let start = NIODeadline.now()
        _ = deadlines.add(at: start + .milliseconds(300)) { fired.withLock { $0.append("300 ms") } }
        _ = deadlines.add(at: start + .milliseconds(100)) { fired.withLock { $0.append("100 ms") } }
        let removed = deadlines.add(at: start + .milliseconds(200)) { fired.withLock { $0.append("removed") } }
        deadlines.remove(removed)
        for _ in 0..<300 where fired.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        XCTAssertEqual(fired.withLock { $0 }, ["100 ms", "300 ms"])
        XCTAssertEqual(deadlines.count, 0)

        // Nothing watched: the next deadline sets the timer again.
        let firedAt = Mutex<NIODeadline?>(nil)
        let added = NIODeadline.now()
        _ = deadlines.add(at: added + .milliseconds(50)) { firedAt.withLock { $0 = .now() } }
        for _ in 0..<300 where firedAt.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
        let at = try XCTUnwrap(firedAt.withLock { $0 })
        XCTAssertGreaterThanOrEqual(at, added + .milliseconds(50), "not before it is due")
    }
}
