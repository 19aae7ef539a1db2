import NIOCore
import RecordStore
import SQLiteDB
import Synchronization

/// The SQLite driver: reads on pooled reader connections, writes through the group-commit
/// writer (`GroupCommitWriter`). Every call runs under the request deadline
/// (`StoreTransactionRunner`).
///
/// Writes run on the writer's thread, reads on the readers' threads (`ThreadPoolTaskExecutor`),
/// except a read by key (`readByKey`: a request's credentials). That one runs on its caller's
/// thread when the caller is on Swift's shared threads and fewer than `inlineReadLimit` such reads
/// already do: handing it to a reader thread and its answer back costs two thread wake-ups, more
/// than the read. Pages stay on the readers' threads: run on Swift's few shared threads, each
/// held one of them for a millisecond or more, and under mixed load the other requests waited
/// (p99 1.4× on two cores). The limit (one less than the shared threads) keeps a thread free
/// for everything else when every inline read waits on a slow disk. Past the deadline an inline
/// read's statement is interrupted and the caller answered `TRY_AGAIN_LATER`, as a pooled one is.
package final class SQLiteStoreDriver: StoreDriver {
    package let database: SQLiteDatabase
    package let writer: GroupCommitWriter
    private let runner: StoreTransactionRunner
    private let requestDeadline: Duration
    /// How many reads by key may run on their callers' threads at once.
    package let inlineReadLimit: Int
    private let inlineReads = Atomic<Int>(0)
    /// Reads by key run on their callers' threads so far (tests).
    private let inlineReadCount = Atomic<Int>(0)
    package var inlineReadsRun: Int { inlineReadCount.load(ordering: .relaxed) }

    /// One less than Swift's shared threads (one a core).
    package static let defaultInlineReadLimit = max(System.coreCount - 1, 0)

    /// Readers: as many as the database keeps idle reader connections.
    package static let readThreads = 8
    /// Shared by every SQLite store of the process (started once, never shut down).
    static let readExecutor = ThreadPoolTaskExecutor(threads: readThreads)

    package var dialect: any SQLDialect { SQLiteDialect() }

    package init(database: SQLiteDatabase, requestDeadline: Duration = .seconds(10), inlineReadLimit: Int = defaultInlineReadLimit) {
        self.database = database
        self.writer = GroupCommitWriter(database: database)
        self.runner = StoreTransactionRunner(deadline: requestDeadline)
        self.requestDeadline = requestDeadline
        self.inlineReadLimit = inlineReadLimit
    }

    package func read<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        try await read(inTransaction: true, body)
    }

    /// `read` without `BEGIN` and `COMMIT`: a statement is a transaction of its own in SQLite,
    /// and a one-statement read (each request's token, a feed page) would run three statements.
    package func readStatement<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        try await read(inTransaction: false, body)
    }

    /// On the caller's thread while a slot is free, else as `readStatement`.
    package func readByKey<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        if takeInlineRead() {
            defer { inlineReads.subtract(1, ordering: .relaxed) }
            return try await readInline(body)
        }
        return try await read(inTransaction: false, body)
    }

    private func read<T: Sendable>(inTransaction: Bool, _ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        let database = self.database
        return try await runner.run(on: SQLiteStoreDriver.readExecutor) { abandonment in
            // Still queued when the deadline passed: never started.
            if abandonment.isAbandoned { throw StoreTransactionRunner.timedOut("the store did not answer in time") }
            let connection = try database.checkOutReader()
            defer { database.checkIn(connection) }
            if inTransaction { try connection.execute("BEGIN DEFERRED") }
            defer { if inTransaction { try? connection.execute("COMMIT") } }
            return try await body(SQLiteStoreConnection(connection: connection))
        }
    }

    /// Whether this read may run on its caller's thread: the caller is on Swift's shared threads
    /// (a task without an executor of its own, such as the writer's or the readers') and a slot
    /// is free, which it then holds.
    private func takeInlineRead() -> Bool {
        guard inlineReadLimit > 0, withUnsafeCurrentTask(body: { $0 != nil && $0?.unownedTaskExecutor == nil }) else { return false }
        if inlineReads.wrappingAdd(1, ordering: .relaxed).newValue <= inlineReadLimit { return true }
        inlineReads.subtract(1, ordering: .relaxed)
        return false
    }

    private func readInline<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        inlineReadCount.add(1, ordering: .relaxed)
        let connection = try database.checkOutReader()
        defer { database.checkIn(connection) }
        let interruption = SQLiteInterruption(connection)
        let deadline = TransactionDeadlines.shared.add(at: .now() + TimeAmount(requestDeadline)) { interruption.interrupt() }
        let result: Result<T, any Error>
        do {
            result = .success(try await withTaskCancellationHandler {
                try await body(SQLiteStoreConnection(connection: connection))
            } onCancel: {
                interruption.interrupt()
            })
        } catch {
            result = .failure(error)
        }
        TransactionDeadlines.shared.remove(deadline)
        // An interrupt past the last statement changes nothing: the read's answer stands.
        if interruption.end(), case .failure = result { throw StoreTransactionRunner.timedOut("the store did not answer in time") }
        return try result.get()
    }

    package func writeTransaction<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> TransactionOutcome<T>)
        async throws -> T
    {
        let writer = self.writer
        return try await runner.run { abandonment in try await writer.submit(abandonment, body) }
    }

    package func writeTransaction<T: Sendable>(size: Int, _ body: @escaping @Sendable (any StoreConnection) async throws -> TransactionOutcome<T>,
                                               committed: @escaping @Sendable (T) -> Void) async throws -> T
    {
        let writer = self.writer
        return try await runner.run { abandonment in try await writer.submit(abandonment, size: size, body, committed: committed) }
    }
}
