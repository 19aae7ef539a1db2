import ArgumentParser
import Foundation
#if canImport(Glibc)
import CMalloc
import Glibc
#endif
import Logging
#if PostgreSQL
import PostgresRecordStore
#endif
import RecordModel
import RecordServer
import RecordStore
import SQLiteRecordStore

/// `scorebookd`: the record-store daemon and its administration commands.
@main
struct Scorebookd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scorebookd",
        abstract: "A CloudKit Web Services-style record store with change feeds and push.",
        version: "scorebookd \(ProductVersion.current)",
        subcommands: [Serve.self, UserCommand.self, APITokenCommand.self, KeyCommand.self, WebhookCommand.self, CatalogAdminCommand.self, Backup.self,
                      Check.self, Restore.self, Migrate.self])

    /// Parses and runs, reporting any failure as one line on standard error.
    static func main() async {
        // Everything the daemon writes (the store, its WAL, assets, backups) is its owner's alone.
        umask(0o077)
        do {
            let arguments = Array(CommandLine.arguments.dropFirst())
            if let problem = SubcommandSuggestion.problem(in: arguments, root: Scorebookd.self) {
                throw CommandFailure(message: problem)
            }
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }  // --help
            if let code = error as? ExitCode { Foundation.exit(code.rawValue) }  // already reported
            let message = (error as? CommandFailure)?.message ?? self.message(for: error)
            FileHandle.standardError.write(Data("scorebookd: \(oneLine(message))\n".utf8))
            Foundation.exit(error is CommandFailure ? 1 : exitCode(for: error).rawValue)
        }
    }
}

/// The first line of a parser message; a list it introduces ("one of the following:" and lines
/// of "- value") joins it, so a refused `--log-level` still names the levels.
func oneLine(_ message: String) -> String {
    let lines = message.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
    guard let first = lines.first else { return "" }
    let items = lines.dropFirst().prefix { $0.hasPrefix("- ") }.map { $0.dropFirst(2) }
    guard first.hasSuffix(":"), !items.isEmpty else { return first }
    return first + " " + items.joined(separator: ", ")
}

/// Why `--database` fails in a daemon built with `--disable-default-traits` (no `PostgreSQL` trait).
let postgreSQLNotBuilt = "this scorebookd was built without PostgreSQL (package trait PostgreSQL); use --data-dir, or rebuild with the default traits"

/// Prints one JSON object on one line with its keys in the order given, so the same answer
/// always reads the same (`{"userRecordName":…,"name":…,"token":…}` as the operations guide shows it).
func printJSON(_ members: KeyValuePairs<String, JSONValue>) {
    var out: [UInt8] = []
    appendOrderedObject(members, to: &out)
    print(String(decoding: out, as: UTF8.self))
}

/// Prints a JSON array of objects, each with its keys in the order given, on one line.
func printJSONArray(_ objects: [KeyValuePairs<String, JSONValue>]) {
    var out: [UInt8] = [UInt8(ascii: "[")]
    for (index, members) in objects.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        appendOrderedObject(members, to: &out)
    }
    out.append(UInt8(ascii: "]"))
    print(String(decoding: out, as: UTF8.self))
}

func appendOrderedObject(_ members: KeyValuePairs<String, JSONValue>, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "{"))
    for (index, member) in members.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        JSONValue.appendString(member.key, to: &out)
        out.append(UInt8(ascii: ":"))
        member.value.serialize(into: &out)
    }
    out.append(UInt8(ascii: "}"))
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the HTTP API.",
        discussion: "Creates the store when the data directory holds none. One serve per data directory: a second is refused, naming the pid of the first (the lock is DIR/scorebookd.lock).")

    @OptionGroup var data: DataDirectoryOption
    @Option(help: "The address to listen on.") var host = "127.0.0.1"
    @Option(help: "The port to listen on; 0 picks a free one.") var port = 8080
    @Option(help: "A CloudKit schema (.ckdb) enforced in production; default: the built-in Scorebook schema.")
    var schema: String?
    @Option(name: .customLong("tombstone-retention"), help: "Days to keep tombstones (and so how old a sync token may be).")
    var tombstoneRetention = 30
    @Option(name: .customLong("log-level"), help: "The least severe messages logged.")
    var logLevel: Logger.Level = .info
    @Option(name: .customLong("rate-limit"), help: "Requests per second allowed per user (bursts of twice that); more are THROTTLED.")
    var rateLimit = 2000
    @Option(name: .customLong("max-connections"), help: "Connections beyond this are closed on arrival.")
    var maxConnections = 4096
    @Option(name: .customLong("busy-timeout"), help: "Milliseconds a write waits for a lock another process holds on the store before answering TRY_AGAIN_LATER.")
    var busyTimeout = 10_000
    @Option(name: .customLong("shutdown-grace"), help: "Seconds in-flight requests may finish after SIGTERM or SIGINT; the daemon exits within this plus one second.")
    var shutdownGrace = 10
    @Option(name: .customLong("trusted-proxy"),
            help: "An address or range (CIDR, IPv4 or IPv6) of a reverse proxy whose X-Forwarded-For, -Proto and -Host are believed; repeatable.")
    var trustedProxies: [String] = []
    @Option(name: .customLong("allow-origin"), help: "A web page origin (https://app.example) allowed to call the API from a browser; repeatable.")
    var allowOrigin: [String] = []
    @Flag(name: .customLong("allow-any-origin"), help: "Let every web page call the API from a browser (also needed for --allow-origin '*').")
    var allowAnyOrigin = false
    @Flag(name: .customLong("allow-private-webhooks"),
          help: "Deliver webhooks to loopback, link-local and private addresses too (refused by default: whoever registers an endpoint could reach services on this host or network).")
    var allowPrivateWebhooks = false
    // Webhook delivery timings, shortened by the tests (documented defaults otherwise).
    @Option(name: .customLong("webhook-timeout-ms"), help: ArgumentHelp(visibility: .hidden)) var webhookTimeoutMilliseconds: Int64 = 10_000
    @Option(name: .customLong("webhook-retry-base-ms"), help: ArgumentHelp(visibility: .hidden)) var webhookRetryBaseMilliseconds: Int64 = 5_000
    @Option(name: .customLong("webhook-retry-window-seconds"), help: ArgumentHelp(visibility: .hidden)) var webhookRetryWindowSeconds: Int64 = 3 * 86_400
    @Option(name: .customLong("webhook-lease-seconds"), help: ArgumentHelp(visibility: .hidden)) var webhookLeaseSeconds: Int64 = 60
    @Option(name: .customLong("webhook-poll-ms"), help: ArgumentHelp(visibility: .hidden)) var webhookPollMilliseconds: Int64 = 500

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0-65535") }
        guard rateLimit >= 1 else { throw ValidationError("--rate-limit must be at least 1") }
        guard maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1") }
        guard (1...600_000).contains(busyTimeout) else { throw ValidationError("--busy-timeout must be 1-600000 milliseconds") }
        guard (0...3600).contains(shutdownGrace) else { throw ValidationError("--shutdown-grace must be 0-3600 seconds") }
        guard tombstoneRetention >= 1 else { throw ValidationError("--tombstone-retention must be at least 1 day") }
        for proxy in trustedProxies where AddressRange(proxy) == nil {
            throw ValidationError("--trusted-proxy '\(proxy)' is not an address or CIDR range (such as 127.0.0.1/32 or fd00::/8)")
        }
        for origin in allowOrigin where origin != "*" {
            guard let url = URL(string: origin), ["http", "https"].contains(url.scheme ?? ""), url.host != nil, url.path.isEmpty,
                  url.query == nil
            else { throw ValidationError("--allow-origin '\(origin)' is not an origin such as https://app.example or http://localhost:3000") }
        }
        guard webhookTimeoutMilliseconds >= 1, webhookRetryBaseMilliseconds >= 1, webhookRetryWindowSeconds >= 1, webhookPollMilliseconds >= 1,
              webhookLeaseSeconds * 1000 > webhookTimeoutMilliseconds + 2000
        else { throw ValidationError("webhook timings must be positive, and the lease longer than the timeout plus 2 s") }
        if allowOrigin.contains("*") && !allowAnyOrigin {
            throw ValidationError("--allow-origin '*' lets every web page call the API: spell it out with --allow-any-origin")
        }
    }

    func run() async throws {
        #if canImport(Glibc)
        // Fixed thresholds instead of glibc's sliding ones. A batch's body, answer and response
        // buffer are 100-300 KB each, every request: mapped (over 128 KB, glibc's default) each
        // was fresh pages, zeroed and faulted in one by one and unmapped again, 12 % of the
        // daemon's time in a one-connection batch run. Up to 1 MB they come from the heap, which
        // keeps up to 1 MB free at its top for the next request (trim threshold) and gives back
        // the rest. The sliding threshold, which also reuses them, rises with every larger block
        // freed and the trim threshold with it, to 64 MB: 20 parallel asset downloads then left
        // the daemon at 135-296 MB (they read in pieces small enough for the heap's free lists,
        // `RecordStorage.assetPieceBytes`). Same run, release, without these two calls: 1.13-1.19x
        // the daemon's CPU a record written (`batch-write-daemon`), 94.6 against 81 MB at the
        // peak of parallel asset transfers (`assets`); see BENCHMARKS.md.
        _ = mallopt(M_MMAP_THRESHOLD, 1024 * 1024)
        _ = mallopt(M_TRIM_THRESHOLD, 1024 * 1024)
        #endif
        let level = logLevel
        // Logs go to standard error: standard output carries only the readiness line.
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "scorebookd")
        let openFiles = OpenFileLimit.raiseToMaximum()
        if openFiles < UInt64(maxConnections) + 64 {
            logger.warning("the open-file limit is \(openFiles): at most about \(openFiles > 64 ? openFiles - 64 : 0) connections (event streams included) fit, fewer than --max-connections \(maxConnections); raise it with ulimit -n")
        }
        let loadedSchema = try loadSchema()
        let storage: any RecordStorage
        if let url = data.postgresURL {
            #if PostgreSQL
            storage = try await PostgresAdministration.open(url: url, create: true, schema: loadedSchema, logger: logger)
            #else
            _ = url
            throw CommandFailure(message: postgreSQLNotBuilt)  // validate() refused it already
            #endif
        } else {
            // One serve per data directory; on PostgreSQL any number of daemons serve one database.
            try lockDataDirectory()
            let store = try data.openStore(schema: loadedSchema)
            store.setBusyTimeout(milliseconds: Int32(busyTimeout))
            storage = SQLiteStorage(store)
        }
        let api = RecordAPI(store: storage, requestsPerSecond: Double(rateLimit), logger: logger, allowsPrivateWebhooks: allowPrivateWebhooks)
        var configuration = HTTPServerConfiguration(host: host, port: port)
        configuration.maximumConnections = maxConnections
        configuration.shutdownGraceSeconds = shutdownGrace
        // Whatever the store is doing (PostgreSQL gone or hung, a request half-sent), the process
        // ends within the grace plus one second of the signal.
        ShutdownWatchdog.arm(graceSeconds: shutdownGrace, logger: logger)
        configuration.trustedProxies = trustedProxies.compactMap(AddressRange.init)
        configuration.crossOrigin = CrossOriginPolicy(allowedOrigins: allowOrigin.filter { $0 != "*" }, allowsAnyOrigin: allowAnyOrigin)
        var server = HTTPServer(api: api, configuration: configuration, logger: logger)
        server.services = [
            TombstonePurger(store: storage, retentionDays: tombstoneRetention, logger: logger), DaemonHeartbeat(api: api, logger: logger),
            WebhookDeliveryService(store: storage, configuration: webhookConfiguration, counters: api.metrics.webhooks, logger: logger),
        ]
        do {
            try await server.run { host, port in
                let shownHost = host.contains(":") ? "[\(host)]" : host
                print("scorebookd listening on http://\(shownHost):\(port)")
                fflush(nil)
                // Standard output keeps the one readiness line; what runs, and on what, goes beside the logs.
                Serve.note("scorebookd \(ProductVersion.current) started (pid \(getpid())), store \(storeDescription)")
            }
        } catch {
            await storage.close()
            throw CommandFailure(message: "cannot serve on \(host):\(port): \(Serve.describe(error))")
        }
        await storage.close()
        Serve.note("scorebookd \(ProductVersion.current) stopped (pid \(getpid()))")
    }

    var webhookConfiguration: WebhookDeliveryConfiguration {
        var configuration = WebhookDeliveryConfiguration()
        configuration.allowPrivateTargets = allowPrivateWebhooks
        configuration.timeoutMilliseconds = webhookTimeoutMilliseconds
        configuration.retryBaseMilliseconds = webhookRetryBaseMilliseconds
        configuration.retryWindowMilliseconds = webhookRetryWindowSeconds * 1000
        configuration.leaseMilliseconds = webhookLeaseSeconds * 1000
        configuration.pollMilliseconds = webhookPollMilliseconds
        return configuration
    }

    /// The store as the start line names it: the SQLite file, or the PostgreSQL server and
    /// database without user or password.
    var storeDescription: String {
        guard let url = data.postgresURL else { return data.storeFile }
        guard var parts = URLComponents(string: url) else { return "PostgreSQL" }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        return "PostgreSQL \(parts.string ?? url)"
    }

    /// A line on standard error whatever --log-level says: the start and the end of a serve.
    static func note(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Refuses a data directory another `serve` holds, naming its pid.
    func lockDataDirectory() throws {
        let directory = data.dataDirectory
        // Made here so the lock file can be; a directory that cannot be made is reported by
        // `openStore`, in the words every command uses.
        if !FileManager.default.fileExists(atPath: directory) {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        do {
            try ServeLock.acquire(directory: directory)
        } catch ServeLock.Failure.held(let pid) {
            throw CommandFailure(message: "data directory \(directory) is already being served by "
                + (pid.map { "scorebookd pid \($0)" } ?? "another scorebookd"))
        } catch {
            _ = try data.openStore()  // says why the directory is unusable
            throw CommandFailure(message: "cannot lock data directory \(directory): \(error)")
        }
    }

    func loadSchema() throws -> Schema {
        guard let schema else { return BuiltinSchema.scorebook }
        guard let text = try? String(contentsOfFile: schema, encoding: .utf8) else {
            throw CommandFailure(message: "cannot read schema file \(schema)")
        }
        do {
            return try Schema.parse(text)
        } catch {
            throw CommandFailure(message: "\(schema): \(error)")
        }
    }

    static func describe(_ error: any Error) -> String {
        let text = "\(error)"
        if text.contains("Address already in use") || text.contains("EADDRINUSE") { return "address already in use" }
        return text.split(separator: "\n").first.map(String.init) ?? text
    }
}

/// `--log-level` names one of swift-log's levels, parsed by the argument parser itself.
extension Logger.Level: @retroactive ExpressibleByArgument {}
