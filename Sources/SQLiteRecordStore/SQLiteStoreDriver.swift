import RecordStore
import SQLiteDB

/// The SQLite driver: reads on pooled reader connections, writes through the group-commit
/// writer (`GroupCommitWriter`). Every call runs under the request deadline
/// (`StoreTransactionRunner`) and on the store's own threads (`ThreadPoolTaskExecutor`).
package final class SQLiteStoreDriver: StoreDriver {
    package let database: SQLiteDatabase
    package let writer: GroupCommitWriter
    private let runner: StoreTransactionRunner

    /// Readers: as many as the database keeps idle reader connections.
    package static let readThreads = 8
    /// Shared by every SQLite store of the process (started once, never shut down).
    static let readExecutor = ThreadPoolTaskExecutor(threads: readThreads)

    package var dialect: any SQLDialect { SQLiteDialect() }

    package init(database: SQLiteDatabase, requestDeadline: Duration = .seconds(10)) {
        self.database = database
        self.writer = GroupCommitWriter(database: database)
        self.runner = StoreTransactionRunner(deadline: requestDeadline)
    }

    package func read<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        try await read(inTransaction: true, body)
    }

    /// `read` without `BEGIN` and `COMMIT`: a statement is a transaction of its own in SQLite,
    /// and a one-statement read (each request's token, a feed page) would run three statements.
    package func readStatement<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        try await read(inTransaction: false, body)
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
