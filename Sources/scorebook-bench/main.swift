import CSQLite
import Foundation
import RecordModel
import RecordServer
import RecordStore
import SQLiteDB

// scorebook-bench: the benchmark scenarios of BENCHMARKS.md. Every figure is printed next to a
// baseline measured in the same run (raw SQLite for writes), because machines here are noisy.
//
//   swift build -c release --product scorebook-bench (and scorebook, scorebookd: the subprocess scenarios run them)
//   .build/release/scorebook-bench [--json] [--backend sqlite|postgres|both] [--records N] [--large N] [--subscribers N] [--rounds N] [--runs N] [--feed-page N] [--client-nice N] [scenario …]
//
// `--backend postgres` (or `both`) runs the scenarios that have a PostgreSQL form on a
// throw-away PostgreSQL 15 cluster the bench starts itself (`BenchPostgres`); `both` runs each
// such scenario on SQLite and then on PostgreSQL, back to back.

// The child half of the loopback floor a fan-out compares itself with (see `LoopbackFloor`).
if CommandLine.arguments.count == 4, CommandLine.arguments[1] == "--loopback-floor",
   let pairs = Int(CommandLine.arguments[2]), let nice = Int32(CommandLine.arguments[3]) {
    LoopbackFloor.runChild(pairs: pairs, nice: nice)
}

var options = BenchOptions()
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--json": options.json = true
    case "--backend":
        let value = arguments.popFirst() ?? ""
        if value == "both" {
            options.backends = BenchBackend.allCases
        } else if let backend = BenchBackend(rawValue: value) {
            options.backends = [backend]
        } else {
            FileHandle.standardError.write(Data("scorebook-bench: --backend must be sqlite, postgres or both\n".utf8))
            exit(2)
        }
    case "--records": options.records = Int(arguments.popFirst() ?? "") ?? options.records
    case "--feed-page": options.feedPage = min(max(Int(arguments.popFirst() ?? "") ?? options.feedPage, 1), 400)
    case "--large": options.largeZone = Int(arguments.popFirst() ?? "") ?? options.largeZone
    case "--subscribers": options.subscribers = Int(arguments.popFirst() ?? "") ?? options.subscribers
    case "--rounds": options.rounds = Int(arguments.popFirst() ?? "") ?? options.rounds
    case "--runs": options.runs = Int(arguments.popFirst() ?? "") ?? options.runs
    case "--client-nice": options.clientNice = Int32(arguments.popFirst() ?? "") ?? options.clientNice
    case "--minutes": options.soakMinutes = Double(arguments.popFirst() ?? "") ?? options.soakMinutes
    case "--parts":
        guard let parts = SoakPart(list: arguments.popFirst() ?? "") else {
            FileHandle.standardError.write(Data("scorebook-bench: --parts takes writers,feeds,lookups,couriers,stream,assets,webhooks\n".utf8))
            exit(2)
        }
        options.soakParts = parts
    case "--help", "-h":
        print("usage: scorebook-bench [--json] [--backend sqlite|postgres|both] [--records N] [--large N] [--subscribers N] [--rounds N] [--runs N] [--feed-page N] [--client-nice N] [--minutes M] [--parts LIST] [scenario …]")
        print("scenarios: \(Scenario.all.map(\.name).joined(separator: " "))")
        exit(0)
    default: options.scenarios.append(argument)
    }
}

struct Scenario: Sendable {
    var name: String
    /// The backends it runs on.
    var backends: Set<BenchBackend>
    var run: @Sendable (BenchOptions, BenchBackend) async throws -> [String: JSONValue]

    /// A scenario of the SQLite store only.
    init(name: String, run: @escaping @Sendable (BenchOptions) async throws -> [String: JSONValue]) {
        self.name = name
        backends = [.sqlite]
        self.run = { options, _ in try await run(options) }
    }

    init(name: String, backends: Set<BenchBackend>, run: @escaping @Sendable (BenchOptions, BenchBackend) async throws -> [String: JSONValue]) {
        self.name = name
        self.backends = backends
        self.run = run
    }

    static let all: [Scenario] = [
        Scenario(name: "storage-limit", run: storageLimit),
        Scenario(name: "batch-write", backends: [.sqlite, .postgres], run: batchWrite),
        Scenario(name: "batch-write-daemon", run: batchWriteDaemon),
        Scenario(name: "write-steps", backends: [.sqlite], run: { options, _ in try await writeSteps(options) }),
        Scenario(name: "change-feed", backends: [.sqlite, .postgres], run: changeFeed),
        Scenario(name: "change-feed-gzip", backends: [.sqlite, .postgres], run: changeFeedGzip),
        Scenario(name: "incremental-sync", backends: [.sqlite, .postgres], run: incrementalSync),
        Scenario(name: "push-latency", run: pushLatency),
        Scenario(name: "ping-pong", backends: [.sqlite, .postgres], run: pingPong),
        Scenario(name: "fan-out", backends: [.sqlite, .postgres], run: fanOut),
        Scenario(name: "long-poll-fan-out", backends: [.sqlite, .postgres], run: longPollFanOut),
        Scenario(name: "two-daemons", backends: [.postgres], run: { options, _ in try await twoDaemons(options) }),
        Scenario(name: "cli-cold-start", run: cliColdStart),
        Scenario(name: "daemon-memory", run: daemonMemory),
        Scenario(name: "cli-memory", run: cliMemory),
        Scenario(name: "first-sync", run: firstSync),
        Scenario(name: "library-first-sync", run: libraryFirstSync),
        Scenario(name: "assets", backends: [.sqlite, .postgres], run: assetTransfers),
        Scenario(name: "query-paging", backends: [.sqlite, .postgres], run: queryPaging),
        Scenario(name: "webhooks", backends: [.sqlite, .postgres], run: webhookDelivery),
        // Run only when named: it takes `--minutes` (ten by default).
        Scenario(name: "soak", run: soak),
    ]
}

func report(_ name: String, _ backend: BenchBackend, _ figures: [String: JSONValue], json: Bool) {
    // SQLite figures keep the names they had before the PostgreSQL backend.
    let name = backend == .sqlite ? name : "\(name)[\(backend.rawValue)]"
    if json {
        var object = figures
        object["scenario"] = .string(name)
        object["backend"] = .string(backend.rawValue)
        print(JSONValue.object(object).serializedString())
    } else {
        let text = figures.sorted { $0.key < $1.key }.map { key, value -> String in
            if case .double(let d) = value { return "\(key)=\(String(format: d < 10 ? "%.3f" : "%.0f", d))" }
            return "\(key)=\(value.serializedString())"
        }
        print("\(name): " + text.joined(separator: " "))
    }
    fflush(nil)
}

func temporaryDirectory(_ name: String) -> String {
    let path = NSTemporaryDirectory() + "scorebook-bench-\(name)-\(getpid())"
    try? FileManager.default.removeItem(atPath: path)
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

let runByDefault = Scenario.all.filter { $0.name != "soak" }
let selected = options.scenarios.isEmpty ? runByDefault : Scenario.all.filter { options.scenarios.contains($0.name) }
if selected.count != (options.scenarios.isEmpty ? runByDefault.count : options.scenarios.count) {
    FileHandle.standardError.write(Data("scorebook-bench: unknown scenario in \(options.scenarios)\n".utf8))
    exit(2)
}
if options.backends.contains(.postgres) && !BenchPostgres.available {
    FileHandle.standardError.write(Data("scorebook-bench: built without PostgreSQL (package trait PostgreSQL); --backend sqlite only\n".utf8))
    exit(2)
}
// A scenario named on the command line that none of the chosen backends runs is an error, not silence.
for scenario in selected where !options.scenarios.isEmpty && scenario.backends.isDisjoint(with: options.backends) {
    let backends = scenario.backends.map { "--backend \($0.rawValue)" }.sorted().joined(separator: " or ")
    FileHandle.standardError.write(Data("scorebook-bench: \(scenario.name) runs only with \(backends)\n".utf8))
    exit(2)
}
for scenario in selected {
    for backend in options.backends where scenario.backends.contains(backend) {
        do {
            report(scenario.name, backend, try await scenario.run(options, backend), json: options.json)
        } catch {
            FileHandle.standardError.write(Data("scorebook-bench: \(scenario.name) on \(backend.rawValue) failed: \(error)\n".utf8))
            exit(1)
        }
    }
}
BenchPostgres.stopCluster()
