import Foundation
import Logging
import RecordModel
import RecordStore
import Synchronization
#if PostgreSQL
import PostgresCluster
import PostgresNIO
import PostgresRecordStore
#endif

/// A record row as the raw baselines insert it: the store's record name and fields JSON.
typealias RawRow = (name: String, fields: [UInt8])

/// The same inserts as the store makes, straight through the database's own client: the ceiling
/// a write scenario is measured against.
protocol RawBaseline: AnyObject {
    /// One transaction of `rows`, one INSERT statement a row (what the stores do).
    func insert(_ rows: ArraySlice<RawRow>) async throws
    /// Whether `insertBulk` is a second, faster baseline (PostgreSQL: one statement of arrays).
    var hasBulkInsert: Bool { get }
    /// One transaction of `rows` in one statement.
    func insertBulk(_ rows: ArraySlice<RawRow>) async throws
    /// Every row, 400 to a transaction (`insert`); the seconds it took.
    func insertAll(_ rows: [RawRow]) async throws -> Double
    func remove() async
}

extension RawRecordTable: RawBaseline {
    var hasBulkInsert: Bool { false }
    func insertBulk(_ rows: ArraySlice<RawRow>) async throws {}
}

/// The baseline table of a backend, empty.
func makeRawBaseline(_ backend: BenchBackend, name: String) async throws -> any RawBaseline {
    switch backend {
    case .sqlite: return try RawRecordTable(name: name)
    case .postgres: return try await BenchPostgres.rawTable()
    }
}

#if PostgreSQL
/// The bench's own PostgreSQL 15 cluster (PostgresCluster: initdb and pg_ctl in a temporary
/// directory, a free loopback port, run as `postgres` through runuser when the bench is root),
/// started on first use and removed at exit. Durable like the SQLite stores (`synchronous=FULL`):
/// fsync, synchronous_commit and full_page_writes at their defaults, so a commit waits for its WAL
/// flush.
enum BenchPostgres {
    static let available = true
    private static let cluster = Mutex<PostgresTestCluster?>(nil)
    static let quiet = Logger(label: "bench.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    static func sharedCluster() throws -> PostgresTestCluster {
        try cluster.withLock { cluster in
            if let cluster { return cluster }
            let started = try PostgresTestCluster.startDedicated(durable: true)
            cluster = started
            atexit { BenchPostgres.stopCluster() }
            return started
        }
    }

    static func stopCluster() {
        cluster.withLock { cluster in
            defer { cluster = nil }
            return cluster
        }?.stop()
    }

    /// A URL to a new, empty database of the cluster.
    static func createDatabase() throws -> String { try sharedCluster().createDatabase() }
    /// The cluster's data directory (its `postmaster.pid` names the process its CPU is counted from).
    static func dataDirectory() throws -> String { try sharedCluster().directory + "/data" }

    /// The store on a new database (or on `url`), its tables created.
    static func openStore(url: String? = nil) async throws -> any RecordStorage {
        try await PostgresRecordStore.open(url: url ?? createDatabase(), create: true, logger: quiet)
    }

    static func rawTable() async throws -> any RawBaseline { try await RawPostgresTable.make() }
}

/// The raw PostgreSQL baseline: the store's own `records` table and indexes (made by opening a
/// store on a fresh database), filled through postgres-nio on one connection with 400 rows a
/// transaction: `insert` one parameterised INSERT a row (zone 1), `insertBulk` one
/// `INSERT … SELECT FROM unnest(arrays)` a batch (zone 2).
final class RawPostgresTable: RawBaseline, Sendable {
    let client: PostgresClient
    let runTask: Task<Void, Never>
    private let sequences = Mutex<[Int64: Int64]>([1: 0, 2: 0])

    private init(client: PostgresClient, runTask: Task<Void, Never>) {
        self.client = client
        self.runTask = runTask
    }

    static func make() async throws -> RawPostgresTable {
        let url = try BenchPostgres.createDatabase()
        let store = try await BenchPostgres.openStore(url: url)  // the store's own tables and indexes
        await store.close()
        var configuration = try PostgresRecordStore.configuration(url: url)
        configuration.options.maximumConnections = 1
        let client = PostgresClient(configuration: configuration, backgroundLogger: BenchPostgres.quiet)
        let runTask = Task { await client.run() }
        return RawPostgresTable(client: client, runTask: runTask)
    }

    var hasBulkInsert: Bool { true }

    private func nextSequences(zone: Int64, count: Int) -> [Int64] {
        let first = sequences.withLock { sequences in
            let first = sequences[zone, default: 0] + 1
            sequences[zone] = first + Int64(count) - 1
            return first
        }
        return (0..<count).map { first + Int64($0) }
    }

    func insert(_ rows: ArraySlice<RawRow>) async throws {
        let sequence = nextSequences(zone: 1, count: rows.count)
        try await client.withConnection { connection in
            try await connection.query("BEGIN", logger: BenchPostgres.quiet)
            for (offset, row) in rows.enumerated() {
                let seq = sequence[offset], tag = "1-\(sequence[offset])", fields = String(decoding: row.fields, as: UTF8.self)
                try await connection.query(
                    """
                    INSERT INTO records (zone_id, name, type, tag, seq, deleted, fields, parent, created_at, created_by, created_device,
                        modified_at, modified_by, modified_device)
                    VALUES (1, \(row.name), 'Bench', \(tag), \(seq), 0, \(fields), NULL, 1, '_user', NULL, 1, '_user', NULL)
                    """, logger: BenchPostgres.quiet)
            }
            try await connection.query("COMMIT", logger: BenchPostgres.quiet)
        }
    }

    func insertBulk(_ rows: ArraySlice<RawRow>) async throws {
        let sequence = nextSequences(zone: 2, count: rows.count)
        let names = rows.map(\.name), fields = rows.map { String(decoding: $0.fields, as: UTF8.self) }
        let tags = sequence.map { "2-\($0)" }
        try await client.withConnection { connection in
            try await connection.query("BEGIN", logger: BenchPostgres.quiet)
            try await connection.query(
                """
                INSERT INTO records (zone_id, name, type, tag, seq, deleted, fields, parent, created_at, created_by, created_device,
                    modified_at, modified_by, modified_device)
                SELECT 2, n, 'Bench', t, s, 0, f, NULL, 1, '_user', NULL, 1, '_user', NULL
                FROM unnest(\(names)::text[], \(tags)::text[], \(sequence)::bigint[], \(fields)::text[]) AS u(n, t, s, f)
                """, logger: BenchPostgres.quiet)
            try await connection.query("COMMIT", logger: BenchPostgres.quiet)
        }
    }

    func insertAll(_ rows: [RawRow]) async throws -> Double {
        let start = now()
        var index = 0
        while index < rows.count {
            try await insert(rows[index..<min(index + batchSize, rows.count)])
            index += batchSize
        }
        return now() - start
    }

    func remove() async {
        runTask.cancel()
        await runTask.value
    }
}
#else
/// A build without the PostgreSQL trait: the PostgreSQL scenarios refuse to run.
enum BenchPostgres {
    static let available = false

    struct NotBuilt: Error, CustomStringConvertible {
        var description: String { "scorebook-bench was built without PostgreSQL (package trait PostgreSQL)" }
    }

    static func createDatabase() throws -> String { throw NotBuilt() }
    static func dataDirectory() throws -> String { throw NotBuilt() }
    static func openStore(url: String? = nil) async throws -> any RecordStorage { throw NotBuilt() }
    static func rawTable() async throws -> any RawBaseline { throw NotBuilt() }
    static func stopCluster() {}
}
#endif
