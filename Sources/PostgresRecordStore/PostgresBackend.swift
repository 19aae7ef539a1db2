import Foundation
import Logging
import PostgresNIO
import RecordModel
import RecordStore
import Synchronization

/// PostgreSQL 15 under the store engine (`EngineStore`): any number of daemons on one database.
///
/// Every request is one transaction. Ordering guarantees do not lean on one writer in one
/// process: a write transaction first locks its database's row (`SELECT … FOR UPDATE`), then its
/// zone's, and takes the zone's change sequence, the database's zone-list sequence and the
/// database's notification sequence under those locks. Two transactions of one database therefore
/// commit in the order they took their sequences, so a feed or a notification cursor read in any
/// snapshot never skips a number that commits later. The rules themselves (`RecordRules`,
/// `FeedRules`, `QueryRules`, `SubscriptionRules`) are RecordStore's, shared with SQLite.
package final class PostgresBackend: StoreBackend {
    let pool: PostgresConnectionPool
    let logger: Logger
    let productionSchema: Schema
    let clock: @Sendable () -> Int64
    /// Identifies this store in sync tokens (a token from another store is rejected).
    package let storeID: String
    private let state = Mutex(State())
    /// How long one request may take, connection wait included, before it answers `TRY_AGAIN_LATER`.
    let requestDeadline: Duration
    package let tokenUses = TokenUseRecorder()
    /// The store's connections as the engine's driver.
    package let driver: PostgresStoreDriver
    /// The transaction scripts written once for both backends, on this database.
    package let engine: StoreEngine

    private struct State {
        var onCommit: (@Sendable (Set<Int64>) -> Void)?
        var listener: Task<Void, Never>?
    }

    /// The error of a URL that is not `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`.
    package struct ConfigurationError: Error, CustomStringConvertible {
        package var description: String
    }

    /// Parses `postgres://USER:PASS@HOST:PORT/DB` (also `postgresql://`; `?sslmode=disable|prefer|require`).
    package static func configuration(url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql", let host = components.host, !host.isEmpty
        else { throw ConfigurationError(description: "--database must be postgres://USER:PASSWORD@HOST:PORT/DATABASE") }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else { throw ConfigurationError(description: "--database names no database (postgres://…/DATABASE)") }
        let username = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        let password = components.password.flatMap { $0.removingPercentEncoding }
        let sslMode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "disable"
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require": tls = .require(.makeClientConfiguration())
        default: throw ConfigurationError(description: "sslmode must be disable, prefer or require")
        }
        var configuration = PostgresClient.Configuration(host: host, port: components.port ?? 5432, username: username,
                                                         password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(5)
        // Never wait forever: a statement, a lock and an idle transaction are all bounded on the server.
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", "15000"), ("lock_timeout", "10000"), ("idle_in_transaction_session_timeout", "60000"),
            ("application_name", "scorebookd"),
            // Pages are read by index order under a LIMIT; at the default 4 a table without
            // statistics yet (a zone just filled, before autovacuum's ANALYZE) is planned as a
            // bitmap scan of every record after the token and a sort: ~50 ms for a page of 400
            // in a zone of 100,000 instead of 0.3 ms. 1.1 is the usual cost for data in memory or on SSD.
            ("random_page_cost", "1.1"),
        ]
        configuration.options.maximumConnections = 20
        return configuration
    }

    /// Connects to the database at `url` and creates the store's tables when they do not exist
    /// (`create` false: refuses a database that holds no store).
    package static func open(url: String, create: Bool = true, schema: Schema = BuiltinSchema.scorebook, openDeadline: Duration = .seconds(30),
                            clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) },
                            logger: Logger = Logger(label: "scorebookd.postgres")) async throws -> PostgresBackend
    {
        let pool = try PostgresBackend.connectionPool(url: url, logger: logger)
        do {
            // A store that still needs a migration step with data to rewrite (the query index's
            // backfill) gets an hour instead of the open deadline, and so does a daemon waiting
            // for another one's migration: a large store must not fail its upgrade half-way at 30 s.
            let migrating = try await PostgresBackend.needsDataMigration(pool, logger: logger, url: url, deadline: openDeadline)
            let storeID = try await PostgresBackend.prepare(pool, create: create, logger: logger, url: url,
                                                            deadline: migrating ? .seconds(3600) : openDeadline, migrating: migrating)
            return PostgresBackend(pool: pool, storeID: storeID, schema: schema, clock: clock, logger: logger)
        } catch {
            pool.close()
            throw error
        }
    }

    private init(pool: PostgresConnectionPool, storeID: String, schema: Schema, clock: @escaping @Sendable () -> Int64, logger: Logger) {
        self.pool = pool
        self.storeID = storeID
        self.productionSchema = schema
        self.clock = clock
        self.logger = logger
        self.requestDeadline = .seconds(10)
        self.driver = PostgresStoreDriver(pool: pool, logger: logger, requestDeadline: requestDeadline)
        self.engine = StoreEngine(driver: driver, storeID: storeID, clock: clock, productionSchema: schema)
        let listener = Task { [weak self, pool, logger] in
            await PostgresBackend.listenForCommits(pool: pool, logger: logger) { [weak self] databaseIDs in
                self?.announce(databaseIDs)
            }
        }
        state.withLock { $0.listener = listener }
    }

    private func announce(_ databaseIDs: Set<Int64>) {
        let observer = state.withLock { $0.onCommit }
        observer?(databaseIDs)
    }

    /// Creates the tables or brings them to `StoreMigration.latestVersion` (under an advisory
    /// lock, so daemons starting together do not race) and returns the store's identity.
    private static func prepare(_ pool: PostgresConnectionPool, create: Bool, logger: Logger, url: String, deadline: Duration,
                                migrating: Bool) async throws -> String
    {
        try await withDeadline(deadline, unreachable: "PostgreSQL at \(redacted(url)) is unreachable") { abandonment in
            try await pool.withConnection(abandonment) { connection in
                try await connection.query("BEGIN", logger: logger)
                do {
                    if migrating {
                        // Still bounded, by the hour above: waiting for the lock, and each statement.
                        try await connection.query("SET LOCAL lock_timeout = '3600s'", logger: logger)
                        try await connection.query("SET LOCAL statement_timeout = '600s'", logger: logger)
                    }
                    try await connection.query("SELECT pg_advisory_xact_lock(7270001)", logger: logger)
                    let exists = try await connection.query("SELECT to_regclass('meta') IS NOT NULL", logger: logger)
                        .collect().first?.decode(Bool.self) ?? false
                    if !exists && !create {
                        throw StoreMissingError(description: "\(redacted(url)) holds no scorebook store")
                    }
                    try await migrate(connection, tablesExist: exists, logger: logger)
                    let fresh = RandomToken.hex(bytes: 8)
                    try await connection.query(
                        "INSERT INTO meta (key, value) VALUES ('store_id', \(fresh)) ON CONFLICT (key) DO NOTHING", logger: logger)
                    let id = try await connection.query("SELECT value FROM meta WHERE key = 'store_id'", logger: logger)
                        .collect().first?.decode(String.self) ?? fresh
                    try await connection.query("COMMIT", logger: logger)
                    return id
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
        }
    }

    /// Whether the store at the client's database exists and is at a version before a step that
    /// rewrites stored data (read without the lock, within the open deadline).
    private static func needsDataMigration(_ pool: PostgresConnectionPool, logger: Logger, url: String, deadline: Duration) async throws -> Bool {
        try await withDeadline(deadline, unreachable: "PostgreSQL at \(redacted(url)) is unreachable") { abandonment in
            try await pool.withConnection(abandonment) { connection in
                let exists = try await connection.query("SELECT to_regclass('meta') IS NOT NULL", logger: logger)
                    .collect().first?.decode(Bool.self) ?? false
                guard exists else { return false }
                let recorded = try await connection.query("SELECT value FROM meta WHERE key = 'schema_version'", logger: logger)
                    .collect().first?.decode(String.self)
                let version = recorded.flatMap { Int($0) } ?? 1
                return StoreMigration.all.contains { $0.version > version && $0.backfillsQueryIndex }
            }
        }
    }

    /// The URL without its password, for messages.
    static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return "the database" }
        if components.password != nil { components.password = "***" }
        return components.string ?? "the database"
    }

    package func setCommitObserver(_ observer: @escaping @Sendable (Set<Int64>) -> Void) {
        state.withLock { $0.onCommit = observer }
        engine.setCommitObserver(observer)
    }

    package func close() async {
        let listener = state.withLock { $0.listener }
        listener?.cancel()
        await listener?.value
        pool.close()
        // Uploads in flight at shutdown leave their staged files here.
        try? FileManager.default.removeItem(atPath: PostgresBackend.stagingDirectoryPath)
    }

    // MARK: Maintenance

    package func liveDaemonCount(heartbeatFrom daemonID: String) async throws -> Int {
        try await engine.liveDaemonCount(heartbeatFrom: daemonID)
    }
}
