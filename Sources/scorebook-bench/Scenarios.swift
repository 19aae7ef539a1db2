import CSQLite
import CNIOLinux
import Foundation
import RecordModel
import RecordServer
import RecordStore
import SQLiteDB
import SQLiteRecordStore
import Synchronization

let batchSize = 400

/// (1) The ceiling: raw inserts of the records the write scenarios send, 400 to a transaction.
func storageLimit(_ options: BenchOptions) async throws -> [String: JSONValue] {
    let table = try RawRecordTable(name: "raw")
    defer { table.remove() }
    let rows = RawRecordTable.rows(0..<options.records)
    let rate = Double(rows.count) / (try table.insertAll(rows))
    return ["records": .int(Int64(rows.count)), "recordsPerSecond": .double(rate), "bytesPerRecord": .int(Int64(rows[0].fields.count))]
}

/// One connection's batches timed against raw batches of the same records, interleaved batch by
/// batch so the machine's noise hits both alike: wall time, CPU time (the ratios of wall time move
/// ±10 % between runs here with the disk's fsync, CPU time much less), and each batch's raw time
/// over its HTTP time (their median hardly moves with a burst of noise on this shared machine).
struct InterleavedBatches {
    var rawSeconds = 0.0, httpSeconds = 0.0, rawCPU = 0.0, httpCPU = 0.0
    var latencies: [Double] = [], batchRatios: [Double] = []
    private var lastRawSeconds = 0.0

    mutating func raw(_ insert: () async throws -> Void) async rethrows {
        let cpuStarted = processCPUSeconds(), started = now()
        try await insert()
        lastRawSeconds = now() - started
        rawSeconds += lastRawSeconds
        rawCPU += processCPUSeconds() - cpuStarted
    }

    /// Times the request of the batch `raw` just inserted; `cpuSeconds` is the CPU time of every
    /// process it costs.
    mutating func request(cpuSeconds: () -> Double, _ send: () throws -> (status: Int, body: [UInt8])) throws {
        let cpuStarted = cpuSeconds(), started = now()
        let (status, answer) = try send()
        let elapsed = now() - started
        httpSeconds += elapsed
        httpCPU += cpuSeconds() - cpuStarted
        latencies.append(elapsed * 1000)
        batchRatios.append(lastRawSeconds / elapsed)
        guard status == 200 else {
            throw RawHTTPConnection.Failure(description: "HTTP batch failed: \(status) \(String(decoding: answer.prefix(300), as: UTF8.self))")
        }
    }

    var batchRatioMedian: Double { Stats(samples: batchRatios).median }
    var cpuRatio: Double { (rawCPU / httpCPU * 1000).rounded() / 1000 }
}

/// (2) records/modify with atomic 400-record batches: in-process through the store, and end to
/// end over HTTP with keep-alive. The raw baseline runs interleaved with them, batch by batch
/// (raw, store, HTTP, raw, …), so that the machine's noise hits all three alike and the ratios
/// hold even when the machine's speed drifts during the run. On PostgreSQL the raw baseline is
/// postgres-nio on one connection (`RawPostgresTable`), a second one its bulk form.
func batchWrite(_ options: BenchOptions, _ backend: BenchBackend) async throws -> [String: JSONValue] {
    let records = (0..<options.records).map { benchRecord($0) }
    let rows = RawRecordTable.rows(0..<options.records)
    let table = try await makeRawBaseline(backend, name: "raw-interleaved")

    let storeServer = try await BenchServer.make(backend, name: "store")
    _ = try await storeServer.storage.createZone(storeServer.scope, zoneName: "Bench")
    let server = try await BenchServer.make(backend, name: "http")
    try await server.start()
    let connection = try RawHTTPConnection(port: server.port)
    try createZone("Bench", on: server, connection)
    let bodies = stride(from: 0, to: records.count, by: batchSize).map {
        modifyBody(zone: "Bench", records: Array(records[$0..<min($0 + batchSize, records.count)]))
    }

    var timed = InterleavedBatches()
    var bulkSeconds = 0.0, storeSeconds = 0.0
    for (batch, body) in bodies.enumerated() {
        let range = (batch * batchSize)..<min((batch + 1) * batchSize, records.count)
        try await timed.raw { try await table.insert(rows[range]) }

        if table.hasBulkInsert {
            let started = now()
            try await table.insertBulk(rows[range])
            bulkSeconds += now() - started
        }

        // The operations are made before the clock starts: the store's figure is the store's work.
        let operations = records[range].map { RecordOperation(type: .create, record: $0) }
        let started = now()
        let results = try await storeServer.storage.modifyRecords(
            storeServer.scope, zone: ZoneID(zoneName: "Bench"), operations: operations, atomic: true, deviceID: nil)
        storeSeconds += now() - started
        guard case .saved = results[0] else { throw RawHTTPConnection.Failure(description: "store batch failed: \(results[0])") }

        // CPU time of this process: client and server threads (the phases run one at a time).
        try timed.request(cpuSeconds: { processCPUSeconds() }) {
            try connection.request("POST", server.databasePath + "/records/modify", token: server.token, body: body)
        }
    }
    await storeServer.stop()

    // The same batches again over two, then eight keep-alive connections at once (new record
    // names): one request's JSON work overlaps another's commit, and concurrent batches share a
    // commit, as with several devices syncing. Each pass runs in slices of five batches a
    // connection, each slice followed by raw inserts of its records: the disk's sync time drifts
    // by tens of percent within a minute here, and interleaving makes it hit both sides alike.
    var concurrent: [(lanes: Int, recordsPerSecond: Double, rawRecordsPerSecond: Double)] = []
    for (pass, lanes) in [2, 8].enumerated() {
        let first = records.count * (pass + 1)
        let starts = Array(stride(from: 0, to: records.count, by: batchSize))
        var seconds = 0.0, rawSeconds = 0.0
        for slice in stride(from: 0, to: starts.count, by: lanes * 5) {
            let sliceStarts = starts[slice..<min(slice + lanes * 5, starts.count)]
            let bodies = sliceStarts.map { start in
                modifyBody(zone: "Bench", records: (start..<min(start + batchSize, records.count)).map { benchRecord(first + $0) })
            }
            seconds += try runWriters(lanes: lanes, port: server.port, path: server.databasePath + "/records/modify",
                                      tokens: Array(repeating: server.token, count: lanes), bodies: bodies)
            let end = min(sliceStarts.last! + batchSize, records.count)
            rawSeconds += try await table.insertAll(RawRecordTable.rows((first + sliceStarts.first!)..<(first + end)))
        }
        concurrent.append((lanes, Double(records.count) / seconds, Double(records.count) / rawSeconds))
    }
    await server.stop()
    await table.remove()

    let count = Double(records.count)
    let raw = count / timed.rawSeconds, store = count / storeSeconds, http = count / timed.httpSeconds
    let (twoConnections, secondRaw) = (concurrent[0].recordsPerSecond, concurrent[0].rawRecordsPerSecond)
    let stats = Stats(samples: timed.latencies)
    var figures: [String: JSONValue] = [
        "records": .int(Int64(records.count)), "rawRecordsPerSecond": .double(raw), "storeRecordsPerSecond": .double(store),
        "httpRecordsPerSecond": .double(http), "storeToRawRatio": .double(store / raw), "httpToRawRatio": .double(http / raw),
        "batchMillisecondsMedian": .double(stats.median), "batchMillisecondsP99": .double(stats.p99),
        "httpTwoConnectionsRecordsPerSecond": .double(twoConnections), "secondRawRecordsPerSecond": .double(secondRaw),
        "httpTwoConnectionsToRawRatio": .double(twoConnections / secondRaw),
        "httpToRawRatioBatchMedian": .double(timed.batchRatioMedian),
        "httpEightConnectionsRecordsPerSecond": .double(concurrent[1].recordsPerSecond),
        "eightConnectionsRawRecordsPerSecond": .double(concurrent[1].rawRecordsPerSecond),
        "httpEightConnectionsToRawRatio": .double(concurrent[1].recordsPerSecond / concurrent[1].rawRecordsPerSecond),
    ]
    if backend == .sqlite {  // on PostgreSQL the raw inserts' CPU is the server's, not this process's
        figures["rawCPUMicrosecondsPerRecord"] = .double((timed.rawCPU / count * 1e7).rounded() / 10)
        figures["httpCPUMicrosecondsPerRecord"] = .double((timed.httpCPU / count * 1e7).rounded() / 10)
        figures["httpToRawCPURatio"] = .double(timed.cpuRatio)
    }
    if table.hasBulkInsert {
        let bulk = count / bulkSeconds
        figures["rawBulkRecordsPerSecond"] = .double(bulk)
        figures["httpToRawBulkRatio"] = .double(http / bulk)
        figures["storeToRawBulkRatio"] = .double(store / bulk)
    }
    return figures
}

/// (2b) `batch-write`'s one-connection phase against a real release `scorebookd` (SQLite), each
/// batch interleaved with a raw batch of the same records: the daemon's request path as clients
/// meet it — its own threads, the client in another process — rather than in the bench's
/// process. CPU time is the daemon's (its CPU-time clock) plus this process's, against the raw passes'.
func batchWriteDaemon(_ options: BenchOptions) async throws -> [String: JSONValue] {
    let records = (0..<options.records).map { benchRecord($0) }
    let rows = RawRecordTable.rows(0..<options.records)
    let table = try RawRecordTable(name: "raw-daemon")
    defer { table.remove() }
    let directory = temporaryDirectory("daemon-write")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let daemon = try DaemonUnderTest(directory: directory)
    defer { _ = try? daemon.stop() }
    let connection = try RawHTTPConnection(port: daemon.port)
    try createZone("Bench", on: daemon, connection)
    let bodies = stride(from: 0, to: records.count, by: batchSize).map {
        modifyBody(zone: "Bench", records: Array(records[$0..<min($0 + batchSize, records.count)]))
    }
    var timed = InterleavedBatches()
    let pid = daemon.process.pid
    var daemonCPU = 0.0, rawCPU = 0.0
    for (batch, body) in bodies.enumerated() {
        let range = (batch * batchSize)..<min((batch + 1) * batchSize, records.count)
        let rawStarted = threadCPUSeconds()
        try await timed.raw { try table.insert(rows[range]) }
        rawCPU += threadCPUSeconds() - rawStarted
        let daemonStarted = processCPUSeconds(pid: pid)
        try timed.request(cpuSeconds: { processCPUSeconds() + processCPUSeconds(pid: pid) }) {
            try connection.request("POST", daemon.databasePath + "/records/modify", token: daemon.token, body: body)
        }
        daemonCPU += processCPUSeconds(pid: pid) - daemonStarted
    }
    let count = Double(records.count)
    let stats = Stats(samples: timed.latencies)
    return [
        "records": .int(Int64(records.count)), "rawRecordsPerSecond": .double(count / timed.rawSeconds),
        "daemonRecordsPerSecond": .double(count / timed.httpSeconds), "daemonToRawRatio": .double(timed.rawSeconds / timed.httpSeconds),
        "daemonToRawRatioBatchMedian": .double(timed.batchRatioMedian), "daemonToRawCPURatio": .double(timed.cpuRatio),
        "batchMillisecondsMedian": .double(stats.median), "batchMillisecondsP99": .double(stats.p99),
        // The headline: the daemon's CPU a record against the raw insert's (its floor), same run.
        "daemonCPUMicrosecondsPerRecord": .double(microsecondsPer(daemonCPU, records.count)),
        "rawInsertCPUMicrosecondsPerRecord": .double(microsecondsPer(rawCPU, records.count)),
        "daemonCPUToRawInsert": .double((daemonCPU / max(rawCPU, 1e-9) * 100).rounded() / 100),
    ]
}

/// Sends `bodies` (records/modify batches) over `lanes` keep-alive connections at once, lane i
/// taking every lanes-th body with `tokens[i]` (and `ports[i]` when given); the seconds until the
/// last answer. Throws if any batch failed.
func runWriters(lanes: Int, port: Int, ports: [Int]? = nil, path: String, tokens: [String], bodies: [[UInt8]],
                paths: [String]? = nil) throws -> Double
{
    let started = now()
    let failures = FailureBox()
    let group = DispatchGroup()
    for lane in 0..<lanes {
        group.enter()
        Thread {
            defer { group.leave() }
            do {
                let laneConnection = try RawHTTPConnection(port: ports?[lane] ?? port)
                for body in bodies.enumerated().filter({ $0.offset % lanes == lane }).map(\.element) {
                    let (status, answer) = try laneConnection.request("POST", paths?[lane] ?? path, token: tokens[lane], body: body)
                    if status != 200 || !byteOccurrences(of: "serverErrorCode", in: answer).isEmpty {
                        failures.add("HTTP batch failed with \(status) on connection \(lane): \(String(decoding: answer.prefix(200), as: UTF8.self))")
                    }
                }
            } catch {
                failures.add("connection \(lane): \(error)")
            }
        }.start()
    }
    group.wait()
    let seconds = now() - started
    if let failure = failures.first { throw RawHTTPConnection.Failure(description: failure) }
    return seconds
}

/// Failures of bench threads, reported by the scenario.
final class FailureBox: Sendable {
    private let failures = Mutex<[String]>([])
    func add(_ text: String) { failures.withLock { $0.append(text) } }
    var first: String? { failures.withLock { $0.first } }
}

/// Fills a zone through the store (fast) for the read scenarios.
func fill(_ server: BenchServer, zone: String, count: Int, offset: Int = 0) async throws {
    _ = try await server.storage.createZone(server.scope, zoneName: zone)
    var index = 0
    while index < count {
        let operations = (index..<min(index + batchSize, count)).map { RecordOperation(type: .create, record: benchRecord(offset + $0)) }
        _ = try await server.storage.modifyRecords(server.scope, zone: ZoneID(zoneName: zone), operations: operations, atomic: true, deviceID: nil)
        index += operations.count
    }
}

/// Pages through changes/zone from `token` until moreComing is false; returns records seen and the last token.
/// The page is scanned, not parsed (`scanFeedPage`): a full parse of 400 records cost the
/// in-process client five times the server's own work per page, on the same two cores.
/// `gzip` asks for compressed answers (inflated before the scan); `wire` adds up the answers'
/// bodies as they came.
func fetchAll(_ connection: RawHTTPConnection, _ server: BenchServer, zone: String, from token: String?, gzip: Bool = false,
              wire: WireBytes? = nil, pageSize: Int = 400) throws -> (Int, String)
{
    var token = token
    var seen = 0
    for _ in 0..<100_000 {
        var zoneRequest: [String: JSONValue] = ["zoneID": ["zoneName": .string(zone)]]
        if let token { zoneRequest["syncToken"] = .string(token) }
        let body = JSONValue.object(["zones": [.object(zoneRequest)], "resultsLimit": .int(Int64(pageSize))]).serialized()
        let (status, answer) = try connection.request("POST", server.databasePath + "/changes/zone", token: server.token, body: body,
                                                      acceptEncoding: gzip ? "gzip" : nil, wire: wire)
        guard status == 200, let page = scanFeedPage(answer) else {
            throw RawHTTPConnection.Failure(description: "changes/zone failed: \(status) \(String(decoding: answer.prefix(300), as: UTF8.self))")
        }
        seen += page.records
        token = page.syncToken
        if !page.moreComing { break }
    }
    return (seen, token ?? "")
}

/// The record count, token and moreComing of a one-zone changes/zone answer, found by scanning
/// the bytes: each record (or tombstone) carries one `"recordName":` key (`userRecordName`
/// does not match, and bench records hold no references). Nil when the page does not look
/// like one.
func scanFeedPage(_ bytes: [UInt8]) -> (records: Int, syncToken: String, moreComing: Bool)? {
    func occurrences(of needle: String) -> [Int] { byteOccurrences(of: needle, in: bytes) }
    guard let tokenStart = occurrences(of: #""syncToken":""#).first,
          let tokenEnd = bytes[tokenStart...].firstIndex(of: UInt8(ascii: "\""))
    else { return nil }
    let more = occurrences(of: #""moreComing":"#)
    guard more.count == 1 else { return nil }
    return (occurrences(of: #""recordName":"#).count, String(decoding: bytes[tokenStart..<tokenEnd], as: UTF8.self),
            bytes[more[0]...].starts(with: Array("true".utf8)))
}

/// (3) A full changes/zone of the zone, paged at 400, over HTTP.
func changeFeed(_ options: BenchOptions, _ backend: BenchBackend) async throws -> [String: JSONValue] {
    let server = try await BenchServer.make(backend, name: "feed")
    try await fill(server, zone: "Bench", count: options.records)
    try await server.start()
    let connection = try RawHTTPConnection(port: server.port)
    let start = now()
    let ((seen, _), serverCPU) = try serverCPUSeconds { try fetchAll(connection, server, zone: "Bench", from: nil, pageSize: options.feedPage) }
    let elapsed = now() - start
    let floor = try await FeedFloor(server, zone: "Bench")
    // The raw read: SQLite's own cost of the rows, on the same file in the same run.
    let raw = backend == .sqlite ? try RawFeedFloor(databasePath: server.directory + "/" + SQLiteRecordStore.databaseFileName, zone: "Bench") : nil
    await server.stop()
    guard seen == options.records, floor.records == seen, raw.map({ $0.records == seen }) ?? true else {
        throw RawHTTPConnection.Failure(description: "feed returned \(seen), its floor \(floor.records), of \(options.records)")
    }
    let rate = Double(seen) / elapsed, floorRate = Double(seen) / floor.seconds
    var figures: [String: JSONValue] = [
        "records": .int(Int64(seen)), "seconds": .double(elapsed), "recordsPerSecond": .double(rate),
        "floorSeconds": .double(floor.seconds), "floorRecordsPerSecond": .double(floorRate), "feedToFloor": .double(rate / floorRate),
        "serverCPUMicrosecondsPerRecord": .double(microsecondsPer(serverCPU, seen)),
        "pageSize": .int(Int64(options.feedPage)),
        "serverCPUMicrosecondsPerPage": .double(microsecondsPer(serverCPU, (seen + options.feedPage - 1) / options.feedPage)),
    ]
    if let raw {
        figures["rawReadCPUMicrosecondsPerRecord"] = .double(microsecondsPer(raw.cpuSeconds, raw.records))
        figures["serverCPUToRawRead"] = .double((serverCPU / max(raw.cpuSeconds, 1e-9) * 10).rounded() / 10)
    }
    return figures
}

/// (4) Fetching 10 new changes from a zone of `largeZone` records, against the same in a zone of
/// 1,000: the cost must not grow with the zone.
func incrementalSync(_ options: BenchOptions, _ backend: BenchBackend) async throws -> [String: JSONValue] {
    let server = try await BenchServer.make(backend, name: "incremental")
    try await fill(server, zone: "Small", count: 1000)
    try await fill(server, zone: "Large", count: options.largeZone)
    try await server.start()
    let connection = try RawHTTPConnection(port: server.port)
    var figures: [String: JSONValue] = ["largeZoneRecords": .int(Int64(options.largeZone))]
    for zone in ["Small", "Large"] {
        var (_, token) = try fetchAll(connection, server, zone: zone, from: nil)
        var samples: [Double] = []
        for round in 0..<50 {
            let records = (0..<10).map { benchRecord(10_000_000 + round * 10 + $0) }
            _ = try connection.request("POST", server.databasePath + "/records/modify", token: server.token,
                                       body: modifyBody(zone: zone, records: records))
            let start = now()
            let (seen, next) = try fetchAll(connection, server, zone: zone, from: token)
            samples.append((now() - start) * 1000)
            guard seen == 10 else { throw RawHTTPConnection.Failure(description: "expected 10 changes, got \(seen)") }
            token = next
        }
        let stats = Stats(samples: samples)
        figures["\(zone.lowercased())ZoneMillisecondsMedian"] = .double(stats.median)
        figures["\(zone.lowercased())ZoneMillisecondsP99"] = .double(stats.p99)
    }
    await server.stop()
    return figures
}

/// Opens an SSE connection on a new courier token of the target's user.
/// `control` makes the channel (a fresh connection when nil). Opening many streams, pass one
/// control connection: a fresh one per stream would take every other connection the daemon
/// accepts, and its round-robin would then put all the streams on one of its event loops.
