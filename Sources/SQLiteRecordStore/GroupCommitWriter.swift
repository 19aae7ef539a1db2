import RecordModel
import RecordStore
import SQLiteDB
import Synchronization

/// The one writer of an SQLite store, committing transactions in groups.
///
/// Write transactions queue here. The writer takes the transactions queued, `BEGIN`s once, runs
/// each in its own `SAVEPOINT` (one that fails or asks to roll back undoes only itself and is
/// answered at once), then `COMMIT`s once and answers the others only after that returned: one
/// WAL sync carries the whole group. It runs on one thread of its own, holding the database's
/// writer connection for the group; a transaction abandoned at the deadline before its turn is
/// answered without running.
///
/// A group carries at most `maximumGroupSize` rows (however many small transactions that is):
/// every batch of a group waits for the last one's work, so an unbounded group of large batches
/// holds the first answers back while their clients could be preparing their next batch, and the
/// writer then idles while they do.
package final class GroupCommitWriter: Sendable {
    /// A queued transaction: `run` executes it inside its savepoint, `fail` answers it unrun.
    struct Pending: Sendable {
        let abandonment: TransactionAbandonment
        /// The rows the transaction is about to write (1 when it did not say).
        let size: Int
        let run: @Sendable (SQLiteStoreConnection) async -> Step
        let fail: @Sendable (any Error) -> Void
    }

    /// What a transaction left: whether its writes stay, and how to answer it once the group's
    /// fate is known (nil: committed; an error: the group's commit failed).
    struct Step: Sendable {
        let keeps: Bool
        let error: (any Error)?
        let answer: @Sendable ((any Error)?) -> Void
    }

    private struct Queue {
        var pending: [Pending] = []
        var draining = false
        /// Set by `stop`: transactions submitted after it are refused.
        var stopped = false
        /// `stop` callers waiting for the queue to be committed.
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// The most rows one group carries (a transaction larger than this goes alone): two batches
    /// of 400, or hundreds of small writes. Eight connections sending 400-record batches wrote
    /// about a tenth faster with groups of two than of all queued, and no slower than alone.
    package static let maximumGroupSize = 800

    private let queue = Mutex(Queue())
    private let database: SQLiteDatabase
    private let executor = ThreadPoolTaskExecutor(threads: 1)

    /// Groups committed and transactions they carried, since the writer started (tests read them).
    package let groupsCommitted = Atomic<Int>(0)
    package let transactionsCommitted = Atomic<Int>(0)

    init(database: SQLiteDatabase) { self.database = database }

    /// Transactions waiting for their group.
    package var queuedCount: Int { queue.withLock { $0.pending.count } }

    /// Queues `body` and returns its answer once its group committed; `committed` is called with
    /// a kept answer on the writer's thread right after the group's `COMMIT`, before the caller resumes.
    func submit<T: Sendable>(_ abandonment: TransactionAbandonment, size: Int = 1,
                             _ body: @escaping @Sendable (any StoreConnection) async throws -> TransactionOutcome<T>,
                             committed: (@Sendable (T) -> Void)? = nil) async throws -> T
    {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let pending = Pending(abandonment: abandonment, size: max(1, size), run: { connection in
                do {
                    switch try await body(connection) {
                    case .commit(let value):
                        return Step(keeps: true, error: nil) { error in
                            if let error { return continuation.resume(throwing: error) }
                            committed?(value)
                            continuation.resume(returning: value)
                        }
                    case .rollback(let value):
                        return Step(keeps: false, error: nil) { _ in continuation.resume(returning: value) }
                    }
                } catch {
                    return Step(keeps: false, error: error) { _ in continuation.resume(throwing: error) }
                }
            }, fail: { continuation.resume(throwing: $0) })
            enqueue(pending)
        }
    }

    private func enqueue(_ pending: Pending) {
        let start = queue.withLock { queue -> Bool? in
            if queue.stopped { return nil }
            queue.pending.append(pending)
            defer { queue.draining = true }
            return !queue.draining
        }
        guard let start else {
            return pending.fail(ServerError(.tryAgainLater, "the store is closed; try again", retryAfter: 1))
        }
        if start { Task(executorPreference: executor) { await self.drain() } }
    }

    /// Refuses transactions from now on, returns once those queued are committed, and ends the
    /// writer's thread: a closed store leaves no thread of its own behind.
    package func stop() async {
        let draining = queue.withLock { queue -> Bool in
            defer { queue.stopped = true }
            return queue.draining
        }
        if draining {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let finished = queue.withLock { queue -> Bool in
                    if !queue.draining { return true }
                    queue.stopWaiters.append(continuation)
                    return false
                }
                if finished { continuation.resume() }
            }
        }
        await executor.shutdown()
    }

    /// Whether the writer's thread has ended (`stop`).
    package var isStopped: Bool { executor.isShutDown }

    /// Commits groups until the queue is empty.
    private func drain() async {
        while true {
            // The writer first, then the queue: whatever queued while another process (or a
            // synchronous caller) held the writer goes in the next groups.
            let writer = database.lockWriter()
            var stopWaiters: [CheckedContinuation<Void, Never>] = []
            let group = queue.withLock { queue -> [Pending] in
                if queue.pending.isEmpty {
                    queue.draining = false
                    swap(&stopWaiters, &queue.stopWaiters)
                }
                var count = 0, size = 0
                while count < queue.pending.count, count == 0 || size + queue.pending[count].size <= Self.maximumGroupSize {
                    size += queue.pending[count].size
                    count += 1
                }
                defer { queue.pending.removeFirst(count) }
                return Array(queue.pending.prefix(count))
            }
            if !group.isEmpty { await commit(group, SQLiteStoreConnection(connection: writer)) }
            database.unlockWriter()
            if group.isEmpty {
                for waiter in stopWaiters { waiter.resume() }
                return
            }
        }
    }

    private func commit(_ group: [Pending], _ connection: SQLiteStoreConnection) async {
        let sqlite = connection.connection
        var kept: [Step] = []
        for pending in group {
            if pending.abandonment.isAbandoned {
                pending.fail(StoreTransactionRunner.timedOut("the store did not answer in time"))
                continue
            }
            do {
                if !sqlite.isInTransaction { try sqlite.execute("BEGIN IMMEDIATE") }
                try sqlite.execute("SAVEPOINT grouped")
            } catch {
                pending.fail(error)
                continue
            }
            var step = await pending.run(connection)
            if step.keeps {
                do {
                    try sqlite.execute("RELEASE grouped")
                } catch {
                    let unreleased = step
                    step = Step(keeps: false, error: error) { _ in unreleased.answer(error) }
                }
            }
            if step.keeps {
                kept.append(step)
            } else {
                if sqlite.isInTransaction {
                    try? sqlite.execute("ROLLBACK TO grouped")
                    try? sqlite.execute("RELEASE grouped")
                }
                step.answer(nil)
            }
            if !sqlite.isInTransaction {
                // SQLite ended the whole transaction on that error (a full disk, an I/O error):
                // the group's earlier writes went with it.
                let lost = step.error ?? ServerError(.tryAgainLater, "the store rolled the write back; try again", retryAfter: 1)
                for earlier in kept { earlier.answer(lost) }
                kept.removeAll()
            }
        }
        guard sqlite.isInTransaction else { return }
        do {
            try sqlite.execute("COMMIT")
        } catch {
            try? sqlite.execute("ROLLBACK")
            for step in kept { step.answer(error) }
            return
        }
        groupsCommitted.add(1, ordering: .relaxed)
        transactionsCommitted.add(kept.count, ordering: .relaxed)
        for step in kept { step.answer(nil) }
    }
}
