import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import RecordModel
import RecordStore
import Synchronization

/// The store's PostgreSQL connections: at most `maximum` open, idle ones reused, a closed one
/// dropped when it is next looked at.
///
/// The store keeps its own pool rather than `PostgresClient`'s because a transaction abandoned at
/// the request deadline must give its connection back at once. postgres-nio's
/// `PostgresConnection.query` writes the query to the channel with no promise for the write; on a
/// connection the server has closed (a restart, a stop) the channel's handlers are already gone, so
/// the write fails at the pipeline's head with nobody told and the query's own promise never
/// completes: the task awaiting it waits forever and `PostgresClient.withConnection` never
/// releases its lease. A few of those and the client's pool is "full" of leases on dead
/// connections and every request waits for one. Here the abandoned transaction's lease is given up
/// by the runner's cleanup (the connection closed, its slot freed), whatever its task still awaits.
final class PostgresConnectionPool: Sendable {
    let configuration: PostgresConnection.Configuration
    let maximum: Int
    /// How long opening one connection may take (TCP and the startup exchange together): a hung
    /// server accepts the TCP connection and never answers the startup message.
    let connectTimeout: TimeAmount
    let logger: Logger

    private struct State {
        var idle: [PooledConnection] = []
        /// Idle, leased and being opened.
        var open = 0
        var nextConnectionID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiterID = 0
        var closed = false
    }

    private let state = Mutex(State())

    init(configuration: PostgresConnection.Configuration, maximum: Int, connectTimeout: TimeAmount, logger: Logger) {
        self.configuration = configuration
        self.maximum = maximum
        self.connectTimeout = connectTimeout
        self.logger = logger
    }

    /// Connections open or being opened (tests and metrics).
    var openCount: Int { state.withLock { $0.open } }

    /// Runs `body` on a leased connection. The connection goes back to the pool when `body`
    /// returns, is closed when it throws on a broken connection, and is closed and its slot freed
    /// at once when `abandonment` fires.
    func withConnection<T: Sendable>(_ abandonment: TransactionAbandonment?,
                                     _ body: (PostgresConnection) async throws -> T) async throws -> T
    {
        let pooled = try await lease()
        if abandonment?.isAbandoned == true {
            // Given up while it waited: the connection never carried a query, so it stays.
            release(pooled, reusable: true)
            throw CancellationError()
        }
        let connection = pooled.connection
        let lease = Lease(pool: self, pooled: pooled)
        pooled.holder.withLock { $0 = abandonment }
        abandonment?.onAbandon { lease.end(reusable: false) }
        do {
            let value = try await body(connection)
            lease.end(reusable: true)
            return value
        } catch {
            // The server answered the error on a connection still open: it is reusable (the
            // transaction's caller rolled back). Anything else may have left it mid-exchange.
            let serverAnswered = (error as? PSQLError)?.code == .server || !(error is PSQLError)
            lease.end(reusable: serverAnswered)
            throw error
        }
    }

    /// A connection of the pool and the transaction holding it, if any.
    final class PooledConnection: Sendable {
        let connection: PostgresConnection
        let holder = Mutex<TransactionAbandonment?>(nil)

        init(_ connection: PostgresConnection) {
            self.connection = connection
            // A query on a connection that closed under it is never answered (see above): the
            // transaction holding it is given up the moment it closes, not at the deadline.
            connection.closeFuture.whenComplete { [weak self] _ in
                let holding = self?.holder.withLock { $0 }
                holding?.interrupt(ServerError(.tryAgainLater, "the database closed the connection; try again", retryAfter: 1))
            }
        }
    }

    /// One lease, ended once: by its body or by the abandonment, whichever comes first.
    private final class Lease: Sendable {
        let pool: PostgresConnectionPool
        let pooled: PooledConnection
        private let ended = Atomic<Bool>(false)

        init(pool: PostgresConnectionPool, pooled: PooledConnection) {
            self.pool = pool
            self.pooled = pooled
        }

        func end(reusable: Bool) {
            guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
            pooled.holder.withLock { $0 = nil }
            pool.release(pooled, reusable: reusable)
        }
    }

    private enum Step {
        case use(PooledConnection)
        case connect(Int)
        case wait
    }

    private func lease() async throws -> PooledConnection {
        // Bounded by the caller's deadline: the runner cancels a lease it gave up on.
        while true {
            try Task.checkCancellation()
            let step = try state.withLock { state -> Step in
                if state.closed { throw PoolFailure.closed }
                while let pooled = state.idle.popLast() {
                    if !pooled.connection.isClosed { return .use(pooled) }
                    state.open -= 1
                }
                guard state.open < maximum else { return .wait }
                state.open += 1
                state.nextConnectionID += 1
                return .connect(state.nextConnectionID)
            }
            switch step {
            case .use(let connection):
                return connection
            case .connect(let id):
                do {
                    return PooledConnection(try await connect(id: id))
                } catch {
                    slotFreed()
                    throw error
                }
            case .wait:
                await waitForSlot()
            }
        }
    }

    /// A connection of the caller's own, outside the pool's count (the commit listener's).
    func openUnpooled() async throws -> PostgresConnection {
        let id = state.withLock { state in
            state.nextConnectionID += 1
            return state.nextConnectionID
        }
        return try await connect(id: id)
    }

    /// Opens a connection within `connectTimeout`; one that opens later is closed.
    private func connect(id: Int) async throws -> PostgresConnection {
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        let opening: EventLoopFuture<PostgresConnection> = PostgresConnection.connect(on: eventLoop, configuration: configuration, id: id, logger: logger)
        let promise = eventLoop.makePromise(of: PostgresConnection.self)
        let settled = SettledFlag()
        let timeout = eventLoop.scheduleTask(in: connectTimeout) {
            if settled.settle() { promise.fail(PoolFailure.connectTimedOut) }
        }
        opening.whenComplete { result in
            timeout.cancel()
            if settled.settle() {
                promise.completeWith(result)
            } else if case .success(let connection) = result {
                connection.closeNow()  // opened after the timeout answered: never used
            }
        }
        return try await promise.futureResult.get()
    }

    private final class SettledFlag: Sendable {
        private let value = Atomic<Bool>(false)
        /// True for the first caller only.
        func settle() -> Bool { !value.exchange(true, ordering: .acquiringAndReleasing) }
    }

    enum PoolFailure: Error {
        case connectTimedOut
        case closed
    }

    private func release(_ pooled: PooledConnection, reusable: Bool) {
        let connection = pooled.connection
        let keep = state.withLock { state -> Bool in
            if reusable && !state.closed && !connection.isClosed {
                state.idle.append(pooled)
                return true
            }
            return false
        }
        if !keep {
            connection.closeNow()
            slotFreed()
        } else {
            wakeWaiters()
        }
    }

    private func slotFreed() {
        state.withLock { $0.open -= 1 }
        wakeWaiters()
    }

    private func wakeWaiters() {
        let waiters = state.withLock { state in
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when a slot or an idle connection may be free (or the task is cancelled).
    private func waitForSlot() async {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if Task.isCancelled || state.closed || !state.idle.isEmpty || state.open < maximum { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }

    /// Closes the idle connections and refuses new leases; leased ones close as they come back.
    func close() {
        let (idle, waiters) = state.withLock { state in
            state.closed = true
            defer {
                state.open -= state.idle.count
                state.idle.removeAll()
                state.waiters.removeAll()
            }
            return (state.idle, Array(state.waiters.values))
        }
        for pooled in idle { pooled.connection.closeNow() }
        for waiter in waiters { waiter.resume() }
    }
}

extension PostgresConnection {
    /// Starts closing the connection without waiting for it (queries on it then fail). The
    /// connection is kept alive until it has closed (postgres-nio asserts that in its deinit).
    func closeNow() {
        let closing: EventLoopFuture<Void> = close()
        closing.whenComplete { _ in withExtendedLifetime(self) {} }
    }
}
