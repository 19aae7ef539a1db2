import CSQLite
import Foundation
import RecordModel
import RecordServer
import RecordStore
import SQLiteDB

/// scorebook-bench: the benchmark scenarios of BENCHMARKS.md. Every figure is printed next to a
/// baseline measured in the same run (raw SQLite for writes), because machines here are noisy.
///
///   swift build -c release --product scorebook-bench (and scorebook, scorebookd: the subprocess scenarios run them)
///   .build/release/scorebook-bench [--json] [--records N] [--large N] [--subscribers N] [--rounds N] [--runs N] [scenario …]
struct BenchOptions {
    var json = false
    var records = 100_000
    var largeZone = 1_000_000
    var subscribers = 1000
    var rounds = 200
    var runs = 100
    var scenarios: [String] = []
}

var options = BenchOptions()
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--json": options.json = true
    case "--records": options.records = Int(arguments.popFirst() ?? "") ?? options.records
    case "--large": options.largeZone = Int(arguments.popFirst() ?? "") ?? options.largeZone
    case "--subscribers": options.subscribers = Int(arguments.popFirst() ?? "") ?? options.subscribers
    case "--rounds": options.rounds = Int(arguments.popFirst() ?? "") ?? options.rounds
    case "--runs": options.runs = Int(arguments.popFirst() ?? "") ?? options.runs
    case "--help", "-h":
        print("usage: scorebook-bench [--json] [--records N] [--large N] [--subscribers N] [--rounds N] [--runs N] [scenario …]")
        print("scenarios: \(Scenario.all.map(\.name).joined(separator: " "))")
        exit(0)
    default: options.scenarios.append(argument)
    }
}

struct Scenario {
    var name: String
    var run: (BenchOptions) async throws -> [String: JSONValue]

    static let all: [Scenario] = [
        Scenario(name: "storage-limit", run: storageLimit),
        Scenario(name: "batch-write", run: batchWrite),
        Scenario(name: "change-feed", run: changeFeed),
        Scenario(name: "incremental-sync", run: incrementalSync),
        Scenario(name: "push-latency", run: pushLatency),
        Scenario(name: "ping-pong", run: pingPong),
        Scenario(name: "fan-out", run: fanOut),
        Scenario(name: "cli-cold-start", run: cliColdStart),
        Scenario(name: "daemon-memory", run: daemonMemory),
        Scenario(name: "cli-memory", run: cliMemory),
    ]
}

func report(_ name: String, _ figures: [String: JSONValue]) {
    if options.json {
        var object = figures
        object["scenario"] = .string(name)
        print(JSONValue.object(object).serializedString())
    } else {
        let text = figures.sorted { $0.key < $1.key }.map { key, value -> String in
            if case .double(let d) = value { return "\(key)=\(String(format: d < 10 ? "%.3f" : "%.0f", d))" }
            return "\(key)=\(value.serializedString())"
        }
        print("\(name): " + text.joined(separator: " "))
    }
    fflush(stdout)
}

func temporaryDirectory(_ name: String) -> String {
    let path = NSTemporaryDirectory() + "scorebook-bench-\(name)-\(getpid())"
    try? FileManager.default.removeItem(atPath: path)
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

let selected = options.scenarios.isEmpty ? Scenario.all : Scenario.all.filter { options.scenarios.contains($0.name) }
if selected.count != (options.scenarios.isEmpty ? Scenario.all.count : options.scenarios.count) {
    FileHandle.standardError.write(Data("scorebook-bench: unknown scenario in \(options.scenarios)\n".utf8))
    exit(2)
}
for scenario in selected {
    do {
        report(scenario.name, try await scenario.run(options))
    } catch {
        FileHandle.standardError.write(Data("scorebook-bench: \(scenario.name) failed: \(error)\n".utf8))
        exit(1)
    }
}
