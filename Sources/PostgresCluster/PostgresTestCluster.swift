import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A throw-away PostgreSQL cluster owned by the test run: `initdb` into a temporary directory,
/// `pg_ctl start` on a free loopback port, stopped (and its directory removed) when the test
/// process exits. Each test asks for a fresh database (`CREATE DATABASE`, a file copy of
/// template0, tens of milliseconds).
///
/// Binaries come from `SCOREBOOK_PG_BIN`, else `/usr/lib/postgresql/15/bin` (Debian 12's
/// `postgresql` package). PostgreSQL refuses to run as root, so as root (CI) the server runs as
/// the `postgres` user the package creates (or `nobody`) through `runuser`. Missing binaries are
/// an error, so CI fails loudly; a developer may set `SCOREBOOK_SKIP_POSTGRES_TESTS=1` to skip.
///
/// Tests run it without durability (`fsync=off`: nothing to lose, and faster); scorebook-bench
/// asks for a `durable` one, an fsync per commit like the SQLite store's `synchronous=FULL`.
public final class PostgresTestCluster: Sendable {
    public let port: Int
    public let directory: String
    public let durable: Bool
    let binaries: String
    let runAs: String?
    private let databaseCounter = Mutex(0)

    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    /// Whether the developer asked to skip the PostgreSQL tests.
    public static var skipRequested: Bool {
        ["1", "true", "yes"].contains(ProcessInfo.processInfo.environment["SCOREBOOK_SKIP_POSTGRES_TESTS"]?.lowercased() ?? "")
    }

    /// The run's cluster (or why it could not start); the lock is held while it starts.
    private static let sharedCluster = Mutex<Result<PostgresTestCluster, any Error>?>(nil)

    /// The run's cluster, started on first use.
    public static func shared() throws -> PostgresTestCluster {
        try sharedCluster.withLock { shared in
            if let shared { return shared }
            let result = Result { try PostgresTestCluster() }
            shared = result
            if case .success = result { atexit { PostgresTestCluster.stopShared() } }
            return result
        }.get()
    }

    static func stopShared() {
        if case .success(let cluster)? = sharedCluster.withLock({ $0 }) { cluster.stop() }
    }

    private init(durable: Bool = false) throws {
        self.durable = durable
        let binaries = ProcessInfo.processInfo.environment["SCOREBOOK_PG_BIN"] ?? "/usr/lib/postgresql/15/bin"
        for tool in ["initdb", "pg_ctl", "postgres", "psql"] where !FileManager.default.isExecutableFile(atPath: "\(binaries)/\(tool)") {
            if tool == "psql", FileManager.default.isExecutableFile(atPath: "/usr/bin/psql") { continue }
            throw Unavailable(description: """
                PostgreSQL binaries not found: \(binaries)/\(tool) (install Debian's postgresql package, set SCOREBOOK_PG_BIN, \
                or set SCOREBOOK_SKIP_POSTGRES_TESTS=1 to skip the PostgreSQL tests)
                """)
        }
        self.binaries = binaries
        var template = Array("/tmp/scorebook-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Unavailable(description: "cannot create a temporary directory") }
        directory = String(cString: made)
        if getuid() == 0 {
            let candidates: [String] = ["postgres", "nobody"]
            guard let user = candidates.first(where: { getpwnam($0) != nil }), let entry = getpwnam(user) else {
                throw Unavailable(description: "running as root and no 'postgres' or 'nobody' user to run PostgreSQL as")
            }
            runAs = user
            chmod(directory, 0o755)
            chown(directory, entry.pointee.pw_uid, entry.pointee.pw_gid)
        } else {
            runAs = nil
        }
        port = try PostgresTestCluster.freePort()
        let data = "\(directory)/data"
        try run(["\(binaries)/initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C"],
                asServerUser: true)
        try startServer()
    }

    /// A cluster of its own (for a test that stops and restarts the server); the caller stops it.
    public static func startDedicated(durable: Bool = false) throws -> PostgresTestCluster { try PostgresTestCluster(durable: durable) }

    /// Starts the (stopped) server again on the same port and files.
    public func startServer() throws {
        let durability = durable ? "" : "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
        let options = "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 " + durability
            + "-c max_connections=300 -c shared_buffers=64MB -c dynamic_shared_memory_type=mmap"
        // Through system(3), not Process: Foundation's Process counts a child as running while any
        // descendant holds a descriptor it handed down, and the postmaster would hold it forever.
        var command = ["\(binaries)/pg_ctl", "-D", "\(directory)/data", "-o", options, "-l", "\(directory)/server.log",
                       "-w", "-t", "60", "start"]
        if let runAs { command = ["/usr/sbin/runuser", "-u", runAs, "--"] + command }
        let output = "\(directory)/start.out"
        let line = command.map(PostgresTestCluster.shellQuoted).joined(separator: " ") + " </dev/null >\(PostgresTestCluster.shellQuoted(output)) 2>&1"
        let status = system(line)
        guard status == 0 else {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            let log = (try? String(contentsOfFile: "\(directory)/server.log", encoding: .utf8))?.suffix(2000) ?? ""
            throw Unavailable(description: "pg_ctl start failed (\(status)): \(text) \(log)")
        }
    }

    static func shellQuoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// Stops the server (fast shutdown: open sessions are ended; `immediate`: every server
    /// process quits at once, as in a crash) and keeps its files.
    public func stopServer(immediate: Bool = false) throws {
        try run(["\(binaries)/pg_ctl", "-D", "\(directory)/data", "-m", immediate ? "immediate" : "fast", "-w", "-t", "30", "stop"],
                asServerUser: true)
    }

    /// Sends `signal` to the postmaster and every process it started (SIGSTOP: the server hangs,
    /// its sockets open and silent, as a paused VM's; SIGCONT: it goes on).
    public func signalServer(_ signal: Int32) throws {
        guard let text = try? String(contentsOfFile: "\(directory)/data/postmaster.pid", encoding: .utf8),
            let line = text.split(separator: "\n").first, let postmaster = pid_t(line.trimmingCharacters(in: .whitespaces))
        else { throw Unavailable(description: "the server is not running (no postmaster.pid)") }
        var targets = [postmaster]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // pid (comm) state ppid …: the fields after the command's closing parenthesis.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, pid_t(fields[1]) == postmaster { targets.append(pid) }
        }
        for pid in targets { kill(pid, signal) }
    }

    /// A URL to a new, empty database of this cluster.
    public func createDatabase() throws -> String {
        let name: String = databaseCounter.withLock {
            $0 += 1
            return "t\(getpid())_\($0)"
        }
        try psql("CREATE DATABASE \(name)")
        return url(database: name)
    }

    public func url(database: String) -> String { "postgres://postgres@127.0.0.1:\(port)/\(database)" }

    public func psql(_ sql: String, database: String = "postgres") throws {
        let psql = FileManager.default.isExecutableFile(atPath: "\(binaries)/psql") ? "\(binaries)/psql" : "/usr/bin/psql"
        try run([psql, "-X", "-q", "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", database, "-v", "ON_ERROR_STOP=1", "-c", sql],
                asServerUser: false)
    }

    /// Stops the server at once and removes its files.
    public func stop() {
        _ = try? run(["\(binaries)/pg_ctl", "-D", "\(directory)/data", "-m", "immediate", "-w", "-t", "30", "stop"], asServerUser: true)
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func run(_ arguments: [String], asServerUser: Bool) throws {
        let process = Process()
        var command = arguments
        if asServerUser, let runAs {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            command = ["-u", runAs, "--"] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: arguments[0])
            command = Array(arguments.dropFirst())
        }
        process.arguments = command
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        // Output goes to a file, not a pipe: the postmaster that `pg_ctl start` leaves running
        // inherits the descriptors, and a pipe would then never reach end-of-file.
        let outputPath = "\(directory)/command-\(UUID().uuidString).out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try? output.close()
        let deadline = Date().addingTimeInterval(120)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning {
            process.terminate()
            throw Unavailable(description: "\(arguments.joined(separator: " ")) did not finish within 120 s")
        }
        let text = FileManager.default.contents(atPath: outputPath) ?? Data()
        guard process.terminationStatus == 0 else {
            let log = (try? String(contentsOfFile: "\(directory)/server.log", encoding: .utf8))?.suffix(2000) ?? ""
            throw Unavailable(description: "\(arguments.joined(separator: " ")) failed: \(String(decoding: text, as: UTF8.self)) \(log)")
        }
    }

    /// A port free on loopback right now (bound to 0, read back, released).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Unavailable(description: "cannot create a socket") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(fd, pointer, length) == 0 else { return -1 }
                return getsockname(fd, pointer, &length)
            }
        }
        guard bound == 0 else { throw Unavailable(description: "cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
