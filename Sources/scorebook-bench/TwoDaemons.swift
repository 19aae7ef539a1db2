import Foundation
import RecordModel

/// Two `scorebookd` processes on one PostgreSQL database against one (PostgreSQL only).
///
/// Write throughput: `clients` users, each with its own zone and keep-alive connection, send the
/// same number of 400-record batches, first all to daemon A, then spread over A and B, then all
/// to A again (one, two, one: the machine's drift shows as the two one-daemon figures' spread).
/// Different users, because a user's writes serialize on their database row in PostgreSQL
/// whichever daemon takes them.
///
/// CPU per record: each phase's CPU time of every process serving it (both daemons and all of
/// PostgreSQL's processes, from `/proc`), divided by its records: two daemons should cost no more
/// per record than one (target <= 1.1x), whatever the wall-clock rate a two-core machine allows.
///
/// Push across daemons: an SSE subscriber on A; one-record writes alternate between B (across
/// daemons: PostgreSQL NOTIFY to A's LISTEN connection) and A itself (the same-run baseline).
/// Each sample runs from sending the write to the event's arrival, so it includes the write's
/// own commit; `pushWriteAnsweredMillisecondsMedian` is that write's round trip alone.
func twoDaemons(_ options: BenchOptions) async throws -> [String: JSONValue] {
    let database = try BenchPostgres.createDatabase()
    let limit = ["--rate-limit", "1000000"]
    let a = try DaemonUnderTest(directory: "", database: database, extraArguments: limit)
    let b: DaemonUnderTest
    do {
        b = try DaemonUnderTest(directory: "", database: database, token: a.token, extraArguments: limit)
    } catch {
        _ = try? a.stop()
        throw error
    }
    defer {
        _ = try? a.stop()
        _ = try? b.stop()
    }
    let clients = 4
    var tokens = [a.token]
    for index in 1..<clients { tokens.append(try DaemonUnderTest.createUser("bench\(index)", storeArguments: a.storeArguments)) }
    for token in tokens {
        let (status, _) = try RawHTTPConnection(port: a.port).request(
            "POST", a.databasePath + "/zones/modify", token: token,
            body: Array(#"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Bench"}}}]}"#.utf8))
        guard status == 200 else { throw RawHTTPConnection.Failure(description: "zones/modify answered \(status)") }
    }

    let postgresData = try BenchPostgres.dataDirectory()
    func servingCPU() -> (daemons: Double, postgres: Double) {
        (processCPUSeconds(pid: a.process.pid) + processCPUSeconds(pid: b.process.pid), postgresCPUSeconds(postgresData))
    }
    var cpuPerRecord: [(daemons: Double, postgres: Double)] = []

    // Each phase writes `records` new records: batches of 400 dealt round-robin to the clients.
    func phase(_ number: Int, spread: Bool) throws -> Double {
        let cpuBefore = servingCPU()
        defer {
            let cpuAfter = servingCPU()
            cpuPerRecord.append(((cpuAfter.daemons - cpuBefore.daemons) / Double(options.records) * 1e6,
                                 (cpuAfter.postgres - cpuBefore.postgres) / Double(options.records) * 1e6))
        }
        let offset = (number + 1) * 10_000_000
        let bodies = stride(from: 0, to: options.records, by: batchSize).map { start in
            modifyBody(zone: "Bench", records: (start..<min(start + batchSize, options.records)).map { benchRecord(offset + $0) })
        }
        let ports = (0..<clients).map { spread && $0 % 2 == 1 ? b.port : a.port }
        let seconds = try runWriters(lanes: clients, port: a.port, ports: ports, path: a.databasePath + "/records/modify",
                                     tokens: tokens, bodies: bodies)
        return Double(options.records) / seconds
    }
    let oneBefore = try phase(0, spread: false)
    let two = try phase(1, spread: true)
    let oneAfter = try phase(2, spread: false)
    let one = (oneBefore + oneAfter) / 2
    let totalPerRecord = cpuPerRecord.map { $0.daemons + $0.postgres }
    let onePerRecord = (totalPerRecord[0] + totalPerRecord[2]) / 2

    // Push latency: subscriber on A, writers on A and on B taking turns.
    let zone = "Push"
    let control = try RawHTTPConnection(port: a.port)
    try createZone(zone, on: a, control)
    try subscribe(a, zone: zone)
    let stream = try openEventStream(a)
    _ = stream.drain()
    let writers = [try RawHTTPConnection(port: a.port), try RawHTTPConnection(port: b.port)]
    var same: [Double] = [], across: [Double] = [], writes: [Double] = []
    let rounds = max(2, options.rounds * 2)
    for round in 0..<rounds {
        let body = modifyBody(zone: zone, records: [benchRecord(round)], operation: "forceReplace")
        let start = now()
        let (status, _) = try writers[round % 2].request("POST", a.databasePath + "/records/modify", token: a.token, body: body)
        guard status == 200 else { throw RawHTTPConnection.Failure(description: "push write answered \(status)") }
        // The write's own round trip (a commit with its WAL flush) is most of a delivery.
        writes.append((now() - start) * 1000)
        try awaitEvent(stream)
        let elapsed = (now() - start) * 1000
        if round % 2 == 0 { same.append(elapsed) } else { across.append(elapsed) }
    }
    let sameStats = Stats(samples: same), acrossStats = Stats(samples: across)
    return [
        "clients": .int(Int64(clients)), "recordsPerPhase": .int(Int64(options.records)),
        "oneDaemonRecordsPerSecondBefore": .double(oneBefore), "oneDaemonRecordsPerSecondAfter": .double(oneAfter),
        "twoDaemonsRecordsPerSecond": .double(two), "twoToOneRatio": .double(two / one),
        "cpuMicrosecondsPerRecordOneDaemon": .double(onePerRecord), "cpuMicrosecondsPerRecordTwoDaemons": .double(totalPerRecord[1]),
        "cpuPerRecordTwoToOne": .double(totalPerRecord[1] / onePerRecord),
        "daemonCPUMicrosecondsPerRecord": .array(cpuPerRecord.map { .double(($0.daemons * 10).rounded() / 10) }),
        "postgresCPUMicrosecondsPerRecord": .array(cpuPerRecord.map { .double(($0.postgres * 10).rounded() / 10) }),
        "pushRounds": .int(Int64(across.count)),
        "pushAcrossDaemonsMillisecondsMedian": .double(acrossStats.median), "pushAcrossDaemonsMillisecondsP99": .double(acrossStats.p99),
        "pushAcrossDaemonsMillisecondsMax": .double(acrossStats.percentile(100)),
        "pushSameDaemonMillisecondsMedian": .double(sameStats.median), "pushSameDaemonMillisecondsP99": .double(sameStats.p99),
        "pushWriteAnsweredMillisecondsMedian": .double(Stats(samples: writes).median),
    ]
}

/// CPU seconds of a PostgreSQL cluster: its postmaster and every process it started (the
/// backends, the WAL writer, the checkpointer), from `/proc/PID/stat`.
func postgresCPUSeconds(_ dataDirectory: String) -> Double {
    guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8),
        let postmaster = Int(text.split(separator: "\n").first ?? "")
    else { return 0 }
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    var seconds = 0.0
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let pid = Int(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { continue }
        // After "pid (comm)": state, ppid, ..., utime (14th field of the line) and stime (15th).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let parent = Int(fields[1]), pid == postmaster || parent == postmaster,
            let user = Double(fields[11]), let system = Double(fields[12])
        else { continue }
        seconds += (user + system) / ticks
    }
    return seconds
}
