import Foundation
import RecordClient
import RecordModel
import SyncEngine
import Synchronization

/// (5) Ping-pong: two sync engines on two local stores, both watching the same zone of one
/// user (two machines). A ball record carries a counter; each engine, as soon as the
/// notification of the other's edit has been followed by a sync that applied it, answers with
/// its own edit (counter + 1). A hop is the time from one engine's local edit to the other
/// engine applying it: local commit, send, server commit, notification, long-poll answer,
/// changes/zone, local apply. A round is two hops (ping and pong).
func pingPong(_ options: BenchOptions, _ backend: BenchBackend) async throws -> [String: JSONValue] {
    let server = try await BenchServer.make(backend, name: "pingpong-server")
    try await server.start()
    let directory = temporaryDirectory("pingpong-stores")
    let endpoint = ServerEndpoint(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, container: "iCloud.bench",
                                  environment: "development", token: server.token)
    let zone = ZoneID(zoneName: "PingPong")
    let warmupRounds = 5
    // SCOREBOOK_BENCH_TRACE=1 prints every request of both engines with its timing.
    let trace = ProcessInfo.processInfo.environment["SCOREBOOK_BENCH_TRACE"] == "1"
    let rally = Rally(lastCount: Int64(2 * (options.rounds + warmupRounds)), warmupHops: Int64(2 * warmupRounds), trace: trace)
    var tasks: [Task<Void, any Error>] = []
    for (index, name) in ["a", "b"].enumerated() {
        let store = try LocalRecordStore(path: "\(directory)/\(name).sqlite")
        let transport = TracingTransport(name: name, inner: SocketTransport(), trace: trace)
        let engine = ZoneSynchronizer(store: store, database: RecordClient(endpoint: endpoint, transport: transport), zoneID: zone)
        let player = RallyPlayer(rally: rally, store: store, answersParity: Int64(index))
        tasks.append(Task {
            try await engine.watch(until: nil, pollTimeout: 5, onChange: player.receive, onProblem: { player.problem($0) })
        })
    }
    // Both engines sync, subscribe and start polling; then the ball is served from outside.
    try await Task.sleep(nanoseconds: 2_000_000_000)
    let serve = try RawHTTPConnection(port: server.port)
    let (status, answer) = try serve.request(
        "POST", server.databasePath + "/records/modify", token: server.token,
        body: modifyBody(zone: zone.zoneName, records: [["recordName": .string(Rally.ballName), "recordType": "Rally",
                                                         "fields": ["count": ["value": 0]]]], operation: "forceReplace"))
    guard status == 200 else { throw RawHTTPConnection.Failure(description: "serve failed: \(status) \(String(decoding: answer, as: UTF8.self))") }

    let deadline = now() + 30 + Double(options.rounds)
    while !rally.isFinished, now() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
    for task in tasks { task.cancel() }
    await server.stop()
    for task in tasks { _ = try? await task.value }
    try? FileManager.default.removeItem(atPath: directory)
    let (hops, rounds, problems) = rally.results()
    guard rally.isFinished else {
        throw RawHTTPConnection.Failure(description: "the rally stalled after \(hops.count) hops; problems: \(problems)")
    }
    let hopStats = Stats(samples: hops), roundStats = Stats(samples: rounds)
    return [
        "rounds": .int(Int64(rounds.count)), "hops": .int(Int64(hops.count)),
        "hopMillisecondsMedian": .double(hopStats.median), "hopMillisecondsP99": .double(hopStats.p99),
        "roundMillisecondsMedian": .double(roundStats.median), "roundMillisecondsP99": .double(roundStats.p99),
        "problems": .int(Int64(problems.count)), "firstProblem": .string(problems.first ?? ""),
    ]
}

/// The shared score sheet of a rally: when each count was edited and when it arrived.
final class Rally: Sendable {
    static let ballName = "Rally|~|BALL-5B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D"
    private struct Sheet {
        var edited: [Int64: Double] = [:]
        var hops: [Double] = []
        var rounds: [Double] = []
        var problems: [String] = []
        var highest: Int64 = 0
    }

    private let sheet = Mutex(Sheet())
    let lastCount: Int64
    let warmupHops: Int64
    let trace: Bool

    init(lastCount: Int64, warmupHops: Int64, trace: Bool) {
        self.lastCount = lastCount
        self.warmupHops = warmupHops
        self.trace = trace
    }

    var isFinished: Bool { sheet.withLock { $0.highest >= lastCount } }

    func willEdit(_ count: Int64, at time: Double) { sheet.withLock { $0.edited[count] = time } }

    /// Count `count` reached the other engine at `time`.
    func arrived(_ count: Int64, at time: Double) {
        sheet.withLock { sheet in
            guard count > sheet.highest else { return }
            sheet.highest = count
            guard count > warmupHops, let sent = sheet.edited[count] else { return }
            sheet.hops.append((time - sent) * 1000)
            // The round that started with this engine's own edit two counts ago.
            if count % 2 == 0, let ping = sheet.edited[count - 1] { sheet.rounds.append((time - ping) * 1000) }
        }
    }

    func problem(_ text: String) {
        sheet.withLock { if $0.highest < lastCount { $0.problems.append(text) } }
    }

    func results() -> (hops: [Double], rounds: [Double], problems: [String]) { sheet.withLock { ($0.hops, $0.rounds, $0.problems) } }
}

/// One engine's side: applies the other's count and answers with the next one.
final class RallyPlayer: Sendable {
    let rally: Rally
    let store: LocalRecordStore
    /// This engine answers counts of this parity (0: even, 1: odd).
    let answersParity: Int64

    init(rally: Rally, store: LocalRecordStore, answersParity: Int64) {
        self.rally = rally
        self.store = store
        self.answersParity = answersParity
    }

    func receive(_ change: AppliedChange) {
        guard change.kind == .saved, change.recordName == Rally.ballName,
              let count = change.record?.fields["count"]?.int64Value
        else { return }
        rally.arrived(count, at: now())
        if rally.trace { print(String(format: "%.3f applied %d", now().truncatingRemainder(dividingBy: 1000), count)) }
        guard count % 2 == answersParity, count < rally.lastCount else { return }
        rally.willEdit(count + 1, at: now())
        do {
            try store.edit { editor in
                try editor.save(Record(recordName: Rally.ballName, recordType: "Rally", fields: ["count": .int64(count + 1)]))
            }
        } catch {
            rally.problem("edit failed: \(error)")
        }
    }

    func problem(_ text: String) { rally.problem(text) }
}

/// Wraps a transport to print each request's start and duration (SCOREBOOK_BENCH_TRACE=1).
struct TracingTransport: HTTPTransport {
    let name: String
    let inner: any HTTPTransport
    let trace: Bool

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        guard trace else { return try await inner.send(request) }
        let start = now()
        defer {
            let operation = request.url.path.split(separator: "/").suffix(2).joined(separator: "/")
            print(String(format: "%.3f %@ %@ %.2f ms", start.truncatingRemainder(dividingBy: 1000), name, operation, (now() - start) * 1000))
        }
        return try await inner.send(request)
    }
}
