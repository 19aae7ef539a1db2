import NIOCore
import NIOPosix
import RecordModel
import Synchronization

/// What a transaction left behind must release when it is abandoned: the body registers, as it
/// takes them, the resources only it could give back (a database connection to close).
package final class TransactionAbandonment: Sendable {
    private struct State {
        var abandoned = false
        var cleanups: [@Sendable () -> Void] = []
        var interrupter: (@Sendable (ServerError) -> Void)?
    }

    private let state = Mutex(State())

    package init() {}

    /// Answers the caller `error` now and abandons the transaction, which can no longer succeed
    /// (its connection closed under it): the caller need not wait for the deadline.
    package func interrupt(_ error: ServerError) {
        let interrupter = state.withLock { $0.interrupter }
        interrupter?(error)
    }

    func setInterrupter(_ interrupter: @escaping @Sendable (ServerError) -> Void) {
        state.withLock { $0.interrupter = interrupter }
    }

    /// Forgets the interrupter once the caller is answered: it holds this abandonment (and the
    /// run's race), so kept it would keep both alive for good.
    func clearInterrupter() {
        state.withLock { $0.interrupter = nil }
    }

    /// Whether the runner has given up on the transaction (its caller is already answered).
    package var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Runs `cleanup` when the transaction is abandoned, at once if it already is.
    package func onAbandon(_ cleanup: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.abandoned { return true }
            state.cleanups.append(cleanup)
            return false
        }
        if now { cleanup() }
    }

    func abandon() {
        let cleanups = state.withLock { state -> [@Sendable () -> Void] in
            state.abandoned = true
            state.interrupter = nil
            defer { state.cleanups.removeAll() }
            return state.cleanups
        }
        for cleanup in cleanups { cleanup() }
    }
}

/// Runs one store transaction under the request deadline, for both backends.
///
/// The transaction runs in a task of its own and the caller waits for the first of three things:
/// its result, the deadline, or the caller's own cancellation (a shutdown). On the deadline or the
/// cancellation the caller is answered `TRY_AGAIN_LATER` at once and the transaction is abandoned:
/// cancelled, and its registered cleanups run (PostgreSQL closes the transaction's connection, so
/// the server rolls it back and the connection never returns to a pool). The caller never waits
/// for the abandoned work, which may not honour cancellation: a query on a connection the server
/// went away from, a wait for a connection. A task group would: it always waits for its children.
package struct StoreTransactionRunner: Sendable {
    /// How long a transaction may take, connection wait included.
    package var deadline: Duration
    /// Where the deadline is watched.
    package var deadlines: TransactionDeadlines

    package init(deadline: Duration, deadlines: TransactionDeadlines = .shared) {
        self.deadline = deadline
        self.deadlines = deadlines
    }

    /// Transactions abandoned and not yet ended, across the process (tests and metrics read it).
    package static let abandonedInFlight = Atomic<Int>(0)
    /// Transactions abandoned since the process started.
    package static let abandonedTotal = Atomic<Int>(0)

    /// The answer to a transaction past its deadline or interrupted.
    package static func timedOut(_ reason: String) -> ServerError {
        ServerError(.tryAgainLater, "\(reason); try again", retryAfter: 2)
    }

    /// Runs `body`; past the deadline (or when the caller is cancelled) throws
    /// `TRY_AGAIN_LATER` naming `unreachable` and abandons it. With `executor` the transaction's
    /// task starts on it and ends there, answering the caller from it: a hop onto Swift's pool
    /// and back fewer than a task that then asks for the executor (SQLite's readers).
    package func run<T: Sendable>(unreachable: String = "the store did not answer in time", on executor: (any TaskExecutor)? = nil,
                                  _ body: @escaping @Sendable (TransactionAbandonment) async throws -> T) async throws -> T
    {
        let abandonment = TransactionAbandonment()
        let race = Race<T>()
        let deadline = TimeAmount.nanoseconds(Int64(self.deadline.components.seconds) * 1_000_000_000
                                              + self.deadline.components.attoseconds / 1_000_000_000)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                race.start(continuation)
                let giveUp: @Sendable (ServerError) -> Void = { error in race.giveUp(error, abandonment: abandonment) }
                abandonment.setInterrupter(giveUp)
                race.setWork(Task(executorPreference: executor) {
                    let result: Result<T, any Error>
                    do { result = .success(try await body(abandonment)) } catch { result = .failure(error) }
                    if !race.finish(result) {
                        // Abandoned earlier: its cleanups ran then; it has ended now.
                        StoreTransactionRunner.abandonedInFlight.subtract(1, ordering: .relaxed)
                    }
                    // The race holds this task's handle and the task holds the race: let go, or
                    // every transaction's task (its allocator slab, task-locals, captured state:
                    // about 8 KB) stays in memory for good.
                    race.workEnded()
                })
                let deadlines = self.deadlines
                let watched = deadlines.add(at: .now() + deadline) {
                    giveUp(StoreTransactionRunner.timedOut(unreachable))
                }
                race.whenFinished {
                    deadlines.remove(watched)
                    abandonment.clearInterrupter()
                }
                race.setCancelHandler { giveUp(StoreTransactionRunner.timedOut(unreachable)) }
            }
        } onCancel: {
            race.cancel()
        }
    }
}

/// The one answer of a transaction run: whichever of result, deadline and cancellation comes
/// first resumes the caller; the others do nothing.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var answered = false
        var cancelRequested = false
        var cancelHandler: (@Sendable () -> Void)?
        var finishedHooks: [@Sendable () -> Void] = []
        /// The transaction's task while it runs (nil once it ended: see `workEnded`).
        var work: Task<Void, Never>?
        var workHasEnded = false
        var abandoned = false
    }

    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<T, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    /// What the caller's cancellation does; runs at once when it came first.
    func setCancelHandler(_ handler: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.cancelRequested { return true }
            // Answered already (a transaction can end before this is set): the handler, which
            // holds this race, would never be released.
            if !state.answered { state.cancelHandler = handler }
            return false
        }
        if now { handler() }
    }

    func cancel() {
        let handler = state.withLock { state -> (@Sendable () -> Void)? in
            state.cancelRequested = true
            defer { state.cancelHandler = nil }
            return state.cancelHandler
        }
        handler?()
    }

    /// Runs `hook` once the caller is answered (at once if it already is).
    func whenFinished(_ hook: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.answered { return true }
            state.finishedHooks.append(hook)
            return false
        }
        if now { hook() }
    }

    /// The task running the transaction (cancelled at once if it was given up on already).
    func setWork(_ work: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            // A task that already ended is not kept: nothing would release it.
            if state.workHasEnded { return false }
            state.work = work
            return state.abandoned
        }
        if cancelNow { work.cancel() }
    }

    /// The transaction's task has ended: its handle is dropped, which breaks the reference cycle
    /// between the task (whose closure holds this race) and the race (which holds the handle).
    func workEnded() {
        state.withLock { state in
            state.workHasEnded = true
            state.work = nil
        }
    }

    /// Answers with the transaction's own result; false when the caller was answered before.
    func finish(_ result: Result<T, any Error>) -> Bool {
        guard let (continuation, hooks) = take(abandoning: false) else { return false }
        // The hooks first: the deadline is no longer watched when the caller goes on.
        for hook in hooks { hook() }
        continuation.resume(with: result)
        return true
    }

    /// Abandons the transaction and answers `error`, unless the caller was answered before. The
    /// cleanups run first, so what they free (a pool's slot) is free when the caller goes on.
    func giveUp(_ error: ServerError, abandonment: TransactionAbandonment) {
        guard let (continuation, hooks) = take(abandoning: true) else { return }
        StoreTransactionRunner.abandonedInFlight.add(1, ordering: .relaxed)
        StoreTransactionRunner.abandonedTotal.add(1, ordering: .relaxed)
        state.withLock { $0.work }?.cancel()
        abandonment.abandon()
        for hook in hooks { hook() }
        continuation.resume(throwing: error)
    }

    private func take(abandoning: Bool) -> (CheckedContinuation<T, any Error>, [@Sendable () -> Void])? {
        state.withLock { state -> (CheckedContinuation<T, any Error>, [@Sendable () -> Void])? in
            guard !state.answered, let continuation = state.continuation else { return nil }
            state.answered = true
            state.abandoned = abandoning
            state.continuation = nil
            state.cancelHandler = nil
            defer { state.finishedHooks.removeAll() }
            return (continuation, state.finishedHooks)
        }
    }
}
