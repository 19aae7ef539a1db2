import Foundation
import Logging
import RecordModel
import RecordServer
import RecordStore
import SQLiteRecordStore
import Synchronization

/// A scorebookd served in-process on a free loopback port, with one user, for the HTTP scenarios:
/// the routes of `RecordAPI` over either backend's `RecordStorage`.
final class BenchServer: BenchTarget, Sendable {
    let backend: BenchBackend
    let storage: any RecordStorage
    let api: RecordAPI
    /// The SQLite store's directory (removed by `stop`); empty on PostgreSQL.
    let directory: String
    /// The bound port (0 until started) and the serving task.
    private let serving = Mutex<(port: Int, task: Task<Void, any Error>?)>((0, nil))
    var port: Int { serving.withLock { $0.port } }
    let token: String
    let scope: DatabaseScope

    private init(backend: BenchBackend, storage: any RecordStorage, directory: String) async throws {
        self.backend = backend
        self.storage = storage
        self.directory = directory
        api = RecordAPI(store: storage)
        let (user, token) = try await storage.createUser(name: "bench")
        self.token = token
        scope = DatabaseScope(user: user, container: "iCloud.bench", environment: .development)
    }

    /// A server on a fresh store: a new SQLite directory, or a new database of the bench cluster.
    static func make(_ backend: BenchBackend, name: String) async throws -> BenchServer {
        // The daemon's allocator settings: the in-process server is measured as scorebookd runs.
        AllocatorSettings.apply()
        switch backend {
        case .sqlite:
            let directory = temporaryDirectory(name)
            return try await BenchServer(backend: backend, storage: SQLiteStorage(SQLiteRecordStore(directory: directory)), directory: directory)
        case .postgres:
            return try await BenchServer(backend: backend, storage: BenchPostgres.openStore(), directory: "")
        }
    }

    func start() async throws {
        var logger = Logger(label: "bench")
        logger.logLevel = .critical  // shutdown of the in-process server logs cancellations
        let server = HTTPServer(api: api, configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), logger: logger)
        let ready = AsyncStream<Int>.makeStream()
        let task = Task { try await server.run { _, port in ready.continuation.yield(port) } }
        serving.withLock { $0.task = task }
        for await port in ready.stream {
            serving.withLock { $0.port = port }
            break
        }
    }

    /// Stops serving, closes the store and removes an SQLite store's files.
    func stop() async {
        serving.withLock { $0.task }?.cancel()
        api.pushHub.close()
        await storage.close()
        if !directory.isEmpty { try? FileManager.default.removeItem(atPath: directory) }
    }

    var databasePath: String { "/database/1/iCloud.bench/development/private" }
    var environmentPath: String { "/database/1/iCloud.bench/development" }
}

/// A ~200-byte record of the benchmark type.
func benchRecord(_ index: Int, zone: String? = nil) -> JSONValue {
    [
        "recordName": .string("Bench|~|\(String(format: "%08d", index))-5B1DEB4D-3B7D-4BAD-9BDD"),
        "recordType": "Bench",
        "fields": [
            "name": ["value": .string("Player \(index) of the benchmark league, round robin")],
            "value": ["value": .int(Int64(index))],
            "note": ["value": .string("a note of moderate length to bring it to size")],
        ],
    ]
}

func modifyBody(zone: String, records: [JSONValue], operation: String = "create") -> [UInt8] {
    JSONValue.object([
        "zoneID": ["zoneName": .string(zone)], "atomic": true,
        "operations": .array(records.map { ["operationType": .string(operation), "record": $0] }),
    ]).serialized()
}

/// User and system CPU seconds of this process, all threads.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// CPU seconds of another process (all its threads), from its CPU-time clock.
func processCPUSeconds(pid: pid_t) -> Double {
    var clock = clockid_t()
    guard clock_getcpuclockid(pid, &clock) == 0 else { return 0 }
    var spec = timespec()
    guard clock_gettime(clock, &spec) == 0 else { return 0 }
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

func now() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}
