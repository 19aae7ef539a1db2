import Foundation
import RecordModel
import RecordServer
import Synchronization

/// (8a) Peak RSS of a real release `scorebookd serve` (VmHWM from /proc/PID/status) as it
/// takes `largeZone` records over HTTP, then holds them with `subscribers` connected SSE
/// subscribers while a few changes fan out. The idle daemon's figure is the baseline.
func daemonMemory(_ options: BenchOptions) async throws -> [String: JSONValue] {
    OpenFileLimit.raiseToMaximum()
    let directory = temporaryDirectory("daemon-memory")
    // The rate limit would throttle the bench's burst of 2,000 requests to open 1,000 streams.
    let daemon = try DaemonUnderTest(directory: directory, extraArguments: [
        "--rate-limit", "1000000", "--max-connections", String(max(4096, options.subscribers + 100)),
    ])
    var figures: [String: JSONValue] = ["records": .int(Int64(options.largeZone)), "subscribers": .int(Int64(options.subscribers))]
    func sample(_ phase: String) {
        guard let memory = Subprocess.memory(of: daemon.process.pid) else { return }
        figures["\(phase)ResidentMegabytes"] = .double(Double(memory.resident) / 1_048_576)
        figures["\(phase)PeakMegabytes"] = .double(Double(memory.peak) / 1_048_576)
    }
    sample("idle")
    let connection = try RawHTTPConnection(port: daemon.port)
    try createZone("Bench", on: daemon, connection)
    let start = now()
    var index = 0
    while index < options.largeZone {
        let records = (index..<min(index + batchSize, options.largeZone)).map { benchRecord($0) }
        try post(modifyBody(zone: "Bench", records: records), to: "/records/modify", on: daemon, connection)
        index += records.count
    }
    figures["fillRecordsPerSecond"] = .double(Double(options.largeZone) / (now() - start))
    sample("filled")

    try subscribe(daemon, zone: "Bench")
    var streams: [RawHTTPConnection] = []
    for index in 0..<options.subscribers { streams.append(try openEventStream(daemon, control: connection, index: index)) }
    for stream in streams { _ = stream.drain() }
    let readiness = try ReadinessSet(streams)
    var lastArrivals: [Double] = []
    for round in 0..<5 {
        let body = modifyBody(zone: "Bench", records: [benchRecord(round)], operation: "forceReplace")
        let sent = now()
        try post(body, to: "/records/modify", on: daemon, connection)
        _ = try awaitEventOnAll(streams, readiness: readiness, start: sent)
        lastArrivals.append((now() - sent) * 1000)
    }
    figures["fanOutLastDeliveryMillisecondsMedian"] = .double(Stats(samples: lastArrivals).median)
    sample("subscribed")
    streams.removeAll()
    let exit = try daemon.stop()
    figures["exitStatus"] = .int(Int64(exit.status))
    figures["databaseMegabytes"] = .double(Double(directorySize(directory)) / 1_048_576)
    try? FileManager.default.removeItem(atPath: directory)
    return figures
}

/// (8b) Peak RSS (GNU time's %M, the child's own `ru_maxrss`) and time of the release `scorebook` CLI during the
/// initial sync of `records` Person records from a real scorebookd into an empty store.
/// Baselines: `scorebook --help`, and a no-op sync of the then full store.
func cliMemory(_ options: BenchOptions) async throws -> [String: JSONValue] {
    let scorebook = try siblingBinary("scorebook")
    let directory = temporaryDirectory("cli-memory")
    let daemon = try DaemonUnderTest(directory: directory + "/daemon", container: "iCloud.scorebook", environment: "production",
                                     extraArguments: ["--rate-limit", "1000000"])
    defer { _ = try? daemon.stop() }
    let store = directory + "/cli/scorebook.sqlite"
    try seedPeopleBook(records: options.records, on: daemon, loggingIn: store, with: scorebook)

    let help = try peakResidentSize(scorebook, ["--help"])
    // VmHWM sampled while it runs, as a cross-check of GNU time's figure.
    let sampler = PeakSampler(command: scorebook)
    let initial = try peakResidentSize(scorebook, ["--store", store, "--json", "sync"])
    let sampledPeak = sampler.finish()
    let summary = try JSONValue.parse(initial.output.trimmingCharacters(in: .whitespacesAndNewlines))
    let received = summary["received"]?["saved"]?.int64Value ?? -1
    guard received == Int64(options.records) else {
        throw Subprocess.Failure(description: "the initial sync received \(received): \(initial.output)")
    }
    let noop = try peakResidentSize(scorebook, ["--store", store, "sync"])
    let figures: [String: JSONValue] = [
        "records": .int(Int64(options.records)),
        "initialSyncPeakMegabytes": .double(Double(initial.bytes) / 1_048_576),
        "initialSyncSampledPeakMegabytes": .double(Double(sampledPeak) / 1_048_576),
        "initialSyncSeconds": .double(initial.seconds),
        "initialSyncRecordsPerSecond": .double(Double(options.records) / initial.seconds),
        "noopSyncPeakMegabytes": .double(Double(noop.bytes) / 1_048_576),
        "helpPeakMegabytes": .double(Double(help.bytes) / 1_048_576),
        "storeMegabytes": .double(Double(directorySize(directory + "/cli")) / 1_048_576),
    ]
    try? FileManager.default.removeItem(atPath: directory)
    return figures
}

/// Fills the `ScorebookData` zone of `daemon` with `records` Person records, 400 to a request,
/// and logs the CLI's store at `store` in to it.
func seedPeopleBook(records: Int, on daemon: DaemonUnderTest, loggingIn store: String, with scorebook: String) throws {
    let connection = try RawHTTPConnection(port: daemon.port)
    try createZone("ScorebookData", on: daemon, connection)
    var index = 0
    while index < records {
        let people = (index..<min(index + batchSize, records)).map(personRecord)
        try post(modifyBody(zone: "ScorebookData", records: people), to: "/records/modify", on: daemon, connection)
        index += people.count
    }
    _ = try Subprocess.run(scorebook, ["--store", store, "account", "login", "--server", daemon.baseURL, "--token", daemon.token])
}

/// A Person record as the Scorebook writes it, about 250 bytes.
func personRecord(_ index: Int) -> JSONValue {
    [
        "recordName": .string("Person|~|" + String(format: "%08X-5B1D-4BAD-9BDD-%012X", index, index)),
        "recordType": "Person",
        "fields": [
            "firstName": ["value": .string("Player\(index)")],
            "lastName": ["value": .string("of the benchmark league")],
            "emailAddress": ["value": .string("player\(index)@bench.example")],
            "modificationDate": ["value": .int(1_763_800_000_000 + Int64(index)), "type": "TIMESTAMP"],
        ],
    ]
}

func createZone(_ zone: String, on target: any BenchTarget, _ connection: RawHTTPConnection) throws {
    try post(Array(#"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"\#(zone)"}}}]}"#.utf8),
             to: "/zones/modify", on: target, connection)
}

/// POSTs to a database operation; throws unless 200 and every record saved.
func post(_ body: [UInt8], to operation: String, on target: any BenchTarget, _ connection: RawHTTPConnection) throws {
    let (status, answer) = try connection.request("POST", target.databasePath + operation, token: target.token, body: body)
    guard status == 200, byteOccurrences(of: "serverErrorCode", in: answer).isEmpty else {
        throw RawHTTPConnection.Failure(description: "\(operation) answered \(status): \(String(decoding: answer.prefix(300), as: UTF8.self))")
    }
}

func directorySize(_ path: String) -> Int {
    guard let enumerator = FileManager.default.enumerator(atPath: path) else { return 0 }
    var total = 0
    while let name = enumerator.nextObject() as? String {
        total += (try? FileManager.default.attributesOfItem(atPath: path + "/" + name)[.size] as? Int) ?? 0
    }
    return total
}

/// Samples the VmHWM of the running process(es) of one executable every 20 ms, on a thread of
/// its own, finding them in /proc (the process is a grandchild, under GNU time).
final class PeakSampler: Sendable {
    private let sampled = Mutex<(peak: Int, stopped: Bool)>((0, false))

    init(command: String) {
        Thread.detachNewThread { [self] in
            while !sampled.withLock({ $0.stopped }) {
                for pid in Self.processes(running: command) {
                    if let memory = Subprocess.memory(of: pid) { sampled.withLock { $0.peak = max($0.peak, memory.peak) } }
                }
                usleep(20_000)
            }
        }
    }

    static func processes(running command: String) -> [pid_t] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return names.compactMap { name in
            guard let pid = pid_t(name),
                  let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(name)/exe"),
                  executable == command
            else { return nil }
            return pid
        }
    }

    func finish() -> Int {
        sampled.withLock {
            $0.stopped = true
            return $0.peak
        }
    }
}
