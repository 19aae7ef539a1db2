import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import RecordModel
import RecordStore

/// How the store reaches PostgreSQL: its connections, its transactions under the request
/// deadline, and the connection that listens for other daemons' commits.
extension PostgresBackend {
    /// The store's connection pool for the database at `url` (nothing is opened yet).
    static func connectionPool(url: String, logger: Logger) throws -> PostgresConnectionPool {
        let client = try configuration(url: url)
        let sslMode = URLComponents(string: url)?.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "disable"
        let tls: PostgresConnection.Configuration.TLS
        switch sslMode {
        case "prefer": tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case "require": tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        default: tls = .disable
        }
        var configuration = PostgresConnection.Configuration(host: client.host ?? "127.0.0.1", port: client.port ?? 5432,
                                                             username: client.username, password: client.password,
                                                             database: client.database, tls: tls)
        configuration.options.additionalStartupParameters = client.options.additionalStartupParameters
        return PostgresConnectionPool(configuration: configuration, maximum: client.options.maximumConnections,
                                      connectTimeout: .seconds(5), logger: logger)
    }

    /// Holds one connection of its own (outside the pool) that LISTENs for commits of every daemon
    /// on the database, and tells the commit observer (the push hub) about each, so a write
    /// through another daemon wakes this daemon's long-polls and event streams.
    ///
    /// When the connection closes (PostgreSQL restarted or stopped) it reconnects every 200 ms
    /// until the database answers. Each time it listens again it announces the empty set, "any
    /// database may have changed": notifications committed while it was not listening are read
    /// by every waiter then, not missed.
    static func listenForCommits(pool: PostgresConnectionPool, logger: Logger, _ deliver: @escaping @Sendable (Set<Int64>) -> Void) async {
        while !Task.isCancelled {
            do {
                let connection = try await pool.openUnpooled()
                let listening = Task {
                    try await connection.listen(on: PostgresStoreDriver.commitChannel) { notifications in
                        deliver([])
                        for try await notification in notifications {
                            if let databaseID = Int64(notification.payload) { deliver([databaseID]) }
                        }
                    }
                }
                // The notification sequence may not end when the server goes away (see
                // `PostgresConnectionPool`): the connection's closing is what ends a listen.
                listening.closeWhenEnded(connection)
                await withTaskCancellationHandler {
                    try? await connection.closeFuture.get()
                } onCancel: {
                    connection.closeNow()
                }
                listening.cancel()
            } catch {
                if Task.isCancelled { return }
                logger.debug("commit listener cannot connect: \(error)")
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    // MARK: Running requests

    /// What a transaction body decides: commit, or roll back (an atomic batch that failed) and
    /// still answer.
    typealias Outcome<T: Sendable> = TransactionOutcome<T>

    /// Runs `body` in one transaction of the store's driver (see `PostgresStoreDriver.transaction`).
    func transaction<T: Sendable>(readOnly: Bool = false, _ body: @escaping @Sendable (PostgresConnection) async throws -> Outcome<T>)
        async throws -> T
    {
        try await driver.transaction(readOnly: readOnly, body)
    }

    /// A read of one row within the request deadline: what `GET /ready` asks.
    package func checkReady() async throws {
        try await read { connection in
            _ = try await connection.query("SELECT 1", logger: self.logger).collect()
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await transaction(readOnly: true) { .commit(try await body($0)) }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await transaction { .commit(try await body($0)) }
    }

    /// Fails with `TRY_AGAIN_LATER` when `body` has not finished by `deadline`, abandoning it.
    static func withDeadline<T: Sendable>(_ deadline: Duration, unreachable: String,
                                          _ body: @escaping @Sendable (TransactionAbandonment) async throws -> T) async throws -> T
    {
        try await StoreTransactionRunner(deadline: deadline).run(unreachable: unreachable, body)
    }

}

extension Task where Success == Void, Failure == any Error {
    /// Closes `connection` when this task ends, so whoever waits for its closing stops waiting.
    fileprivate func closeWhenEnded(_ connection: PostgresConnection) {
        Task<Void, Never> {
            _ = await self.result
            connection.closeNow()
        }
    }
}
