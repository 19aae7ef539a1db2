import CSQLite
import CNIOLinux
import Foundation
import RecordModel
import RecordServer
import RecordStore
import SQLiteDB

// The push scenarios: event streams and long-polls, one subscriber and many, beside a loopback floor.

func openEventStream(_ server: any BenchTarget, control: RawHTTPConnection? = nil, index: Int = 0) throws -> RawHTTPConnection {
    let control = try control ?? RawHTTPConnection(port: server.port)
    let (_, answer) = try control.request("POST", server.environmentPath + "/tokens/create", token: server.token,
                                          body: Array(#"{"apnsEnvironment":"development"}"#.utf8))
    guard let url = try JSONValue.parse(answer)["webcourierURL"]?.stringValue, let path = URL(string: url)?.path else {
        throw RawHTTPConnection.Failure(description: "tokens/create failed")
    }
    let stream = try RawHTTPConnection(port: server.port, source: RawHTTPConnection.loopbackSource(forConnection: index))
    try stream.sendRequest("GET", path, token: server.token, accept: "text/event-stream")
    let (status, _) = try stream.readHead()
    guard status == 200 else { throw RawHTTPConnection.Failure(description: "event stream answered \(status)") }
    return stream
}

func subscribe(_ server: any BenchTarget, zone: String, recordType: String = "Bench") throws {
    let connection = try RawHTTPConnection(port: server.port)
    let body = #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"bench","subscriptionType":"query","zoneID":{"zoneName":"\#(zone)"},"query":{"recordType":"\#(recordType)"},"firesOn":["create","update","delete"],"notificationInfo":{"desiredKeys":["value"]}}}]}"#
    let (status, _) = try connection.request("POST", server.databasePath + "/subscriptions/modify", token: server.token, body: Array(body.utf8))
    guard status == 200 else { throw RawHTTPConnection.Failure(description: "subscriptions/modify failed") }
}

/// Reads an event stream until it holds one event with data; bounded by the read timeout.
func awaitEvent(_ stream: RawHTTPConnection) throws {
    var pending: [UInt8] = []
    while true {
        pending += stream.drain()
        if containsCompleteEvent(pending) { return }
        guard try stream.fill(timeoutMilliseconds: 5000) else { throw RawHTTPConnection.Failure(description: "stream closed") }
    }
}

/// A real release scorebookd for the push scenarios, with one zone and a query subscription on
/// it: the waiters and the writer are other processes' sockets, as in production.
/// `connections`: how many the daemon must accept at once (its default stops at 4,096: beyond it
/// the fan-out's streams were closed on arrival and the scenario waited out its timeouts).
func pushDaemon(_ name: String, _ backend: BenchBackend = .sqlite, connections: Int = 0) throws -> DaemonUnderTest {
    let arguments = ["--rate-limit", "1000000", "--max-connections", String(max(4096, connections + 100))]
    let daemon = backend == .postgres
        ? try DaemonUnderTest(directory: "", database: BenchPostgres.createDatabase(), extraArguments: arguments)
        : try DaemonUnderTest(directory: temporaryDirectory(name), extraArguments: arguments)
    try createZone("Bench", on: daemon, RawHTTPConnection(port: daemon.port))
    try subscribe(daemon, zone: "Bench")
    return daemon
}

/// Commit-to-delivery latency for one SSE waiter of a real scorebookd: from sending a one-record
/// modify to the event's arrival, over `rounds` rounds.
func pushLatency(_ options: BenchOptions) async throws -> [String: JSONValue] {
    let daemon = try pushDaemon("push")
    let stream = try openEventStream(daemon)
    _ = stream.drain()
    let writer = try RawHTTPConnection(port: daemon.port)
    var samples: [Double] = []
    for round in 0..<options.rounds {
        let body = modifyBody(zone: "Bench", records: [benchRecord(round)], operation: "forceReplace")
        let start = now()
        _ = try writer.request("POST", daemon.databasePath + "/records/modify", token: daemon.token, body: body)
        try awaitEvent(stream)
        samples.append((now() - start) * 1000)
    }
    _ = try daemon.stop()
    try? FileManager.default.removeItem(atPath: daemon.directory)
    let stats = Stats(samples: samples)
    return ["rounds": .int(Int64(samples.count)), "millisecondsMedian": .double(stats.median), "millisecondsP99": .double(stats.p99)]
}

/// (6) One commit, many connected SSE subscribers of a real scorebookd: time until the last one
/// has the event.
func fanOut(_ options: BenchOptions, _ backend: BenchBackend) async throws -> [String: JSONValue] {
    OpenFileLimit.raiseToMaximum()
    let daemon = try pushDaemon("fanout", backend, connections: options.subscribers)
    var streams: [RawHTTPConnection] = []
    let writer = try RawHTTPConnection(port: daemon.port)
    for index in 0..<options.subscribers { streams.append(try openEventStream(daemon, control: writer, index: index)) }
    for stream in streams { _ = stream.drain() }
    let readiness = try ReadinessSet(streams)
    var lastArrivals: [Double] = []
    var firstArrivals: [Double] = []
    var serverLastWrites: [Double] = []
    var floor = FloorSamples()
    let loopbackFloor = try LoopbackFloor(pairs: streams.count, clientNice: options.clientNice)
    defer { loopbackFloor.stop() }
    let rounds = max(20, options.rounds / 2)
    for round in 0..<rounds {
        let body = modifyBody(zone: "Bench", records: [benchRecord(round)], operation: "forceReplace")
        let start = now()
        _ = try writer.request("POST", daemon.databasePath + "/records/modify", token: daemon.token, body: body)
        let (first, eventBytes) = try awaitEventOnAll(streams, readiness: readiness, start: start, clientNice: options.clientNice)
        lastArrivals.append((now() - start) * 1000)
        firstArrivals.append(first)
        serverLastWrites.append(try serverLastDeliveryMilliseconds(writer))
        // The same writes with no server, right after (the daemon is idle between rounds).
        floor.append(try loopbackFloor.round(bytes: eventBytes))
    }
    _ = try daemon.stop()
    if !daemon.directory.isEmpty { try? FileManager.default.removeItem(atPath: daemon.directory) }
    let last = Stats(samples: lastArrivals), firstStats = Stats(samples: firstArrivals)
    let server = Stats(samples: serverLastWrites)
    return [
        "subscribers": .int(Int64(streams.count)), "rounds": .int(Int64(rounds)), "clientNice": .int(Int64(options.clientNice)),
        "lastDeliveryMillisecondsMedian": .double(last.median), "lastDeliveryMillisecondsP99": .double(last.p99),
        "firstDeliveryMillisecondsMedian": .double(firstStats.median),
        "serverLastWriteMillisecondsMedian": .double(server.median), "serverLastWriteMillisecondsP99": .double(server.p99),
    ].merging(floor.figures(pairs: loopbackFloor.pairs, server: server, client: last)) { $1 }
}

/// The loopback floor's rounds (see `LoopbackFloor`) and how the daemon's figures compare with them.
struct FloorSamples {
    var writers: [Double] = []
    var all: [Double] = []

    mutating func append(_ round: (writers: Double, all: Double)) {
        writers.append(round.writers)
        all.append(round.all)
    }

    /// The floor's medians and p99s, and the daemon's (server side against the floor's writers,
    /// client side against the floor's reader) as multiples of them.
    func figures(pairs: Int, server: Stats, client: Stats) -> [String: JSONValue] {
        let writers = Stats(samples: writers), all = Stats(samples: all)
        return [
            "floorPairs": .int(Int64(pairs)),
            "floorWritersMillisecondsMedian": .double(writers.median), "floorWritersMillisecondsP99": .double(writers.p99),
            "floorAllReadMillisecondsMedian": .double(all.median), "floorAllReadMillisecondsP99": .double(all.p99),
            "serverOverFloorMedian": .double(server.median / writers.median), "serverOverFloorP99": .double(server.p99 / writers.p99),
            "clientOverFloorMedian": .double(client.median / all.median), "clientOverFloorP99": .double(client.p99 / all.p99),
        ]
    }
}

/// The daemon's own figure for the last commit: milliseconds from the commit reaching its push hub
/// to the last delivery it wrote (`scorebookd_push_last_delivery_seconds`), read after the client
/// has seen every delivery, so the client's reading time can be told from the server's fan-out.
func serverLastDeliveryMilliseconds(_ connection: RawHTTPConnection) throws -> Double {
    let (_, metrics) = try connection.request("GET", "/metrics", token: nil)
    let text = String(decoding: metrics, as: UTF8.self)
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("scorebookd_push_last_delivery_seconds ") }),
          let seconds = Double(line.split(separator: " ").last ?? "") else {
        throw RawHTTPConnection.Failure(description: "/metrics has no scorebookd_push_last_delivery_seconds")
    }
    return seconds * 1000
}

/// Waits until every stream holds one event (at most 10 s), read at `clientNice`; the
/// milliseconds from `start` to the first arrival, and the size of the event (the first stream's bytes).
func awaitEventOnAll(_ streams: [RawHTTPConnection], readiness: ReadinessSet? = nil, start: Double,
                     clientNice: Int32 = 0) throws -> (first: Double, eventBytes: Int) {
    let (first, kept) = try awaitOnAll(streams, readiness: readiness, start: start, what: "subscribers", keeping: 0,
                                       clientNice: clientNice, isComplete: containsCompleteEvent)
    return (first, kept.count)
}

/// Waits until `isComplete` holds for what every connection has received (at most 10 s from
/// `start`); the milliseconds to the first completion, and the bytes connection `kept` held when
/// it completed (empty without one). Pass a `ReadinessSet` over the connections made once per
/// scenario: registering 10,000 sockets with epoll inside the timed round would be counted as
/// delivery time.
///
/// The client shares the daemon's two cores, so every read it makes costs the server's writes:
/// a ready socket is read without polling it first, its bytes are checked where they arrived
/// (nothing copied out or allocated per read), and a completed connection's buffer is emptied.
func awaitOnAll(_ connections: [RawHTTPConnection], readiness: ReadinessSet? = nil, start: Double, what: String,
                keeping kept: Int? = nil, clientNice: Int32 = 0,
                isComplete: @escaping (UnsafeBufferPointer<UInt8>) -> Bool) throws -> (first: Double, kept: [UInt8]) {
    guard clientNice != 0 else {
        return try readOnAll(connections, readiness: readiness, start: start, what: what, keeping: kept, isComplete: isComplete)
    }
    return try onThreadAtNice(clientNice) {
        try readOnAll(connections, readiness: readiness, start: start, what: what, keeping: kept, isComplete: isComplete)
    }
}

/// Runs `body` on a new thread at `nice` (a thread's nice value, once raised, cannot be lowered
/// again without privilege, so not on a thread of the shared pool) and waits for it.
func onThreadAtNice<T>(_ nice: Int32, _ body: @escaping () throws -> T) throws -> T {
    // Unsafe to the compiler, which cannot see the hand-over: `body` runs only on the new thread,
    // and `result` is read only after that thread signalled that it is done with both.
    nonisolated(unsafe) var result: Result<T, any Error>?
    nonisolated(unsafe) let work = body
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        // Linux keeps a nice value per thread: `who` 0 is the calling thread.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice)
        result = Result { try work() }
        done.signal()
    }
    thread.start()
    done.wait()
    return try result!.get()
}

private func readOnAll(_ connections: [RawHTTPConnection], readiness: ReadinessSet?, start: Double, what: String,
                keeping kept: Int?, isComplete: (UnsafeBufferPointer<UInt8>) -> Bool) throws -> (first: Double, kept: [UInt8]) {
    let readiness = try readiness ?? ReadinessSet(connections)
    var complete = [Bool](repeating: false, count: connections.count)
    var waiting = connections.count
    var first = Double.nan
    var keptBytes: [UInt8] = []
    let deadline = start + 10
    while waiting > 0, now() < deadline {
        // Not blocked in epoll_wait between deliveries: the daemon's write would then wake this
        // thread for nearly every one of them, and on loopback that wake-up is the daemon's
        // cost (perf: ~10 % of its event loops' time in a 10,000-stream round, in
        // `sock_def_readable`). Looking every 250 µs instead lets deliveries gather while no
        // waiter is parked, at the price of at most that much on the measured time.
        let ready = readiness.wait(timeoutMilliseconds: 0) { index in
            let connection = connections[index]
            // One read: a delivery fits the 64 KB it takes, and epoll reports the socket again if
            // more is left (reading on to EAGAIN would be a second system call per delivery).
            _ = connection.fillAvailable()
            // A finished connection may still get bytes (a heartbeat): read and drop them.
            guard !complete[index], connection.withBuffered(isComplete) else { return }
            if index == kept { keptBytes = connection.withBuffered { Array($0) } }
            connection.discardBuffered()
            complete[index] = true
            waiting -= 1
            if first.isNaN { first = (now() - start) * 1000 }
        }
        if ready < readiness.capacity { usleep(250) }
    }
    for (index, connection) in connections.enumerated() where complete[index] { connection.discardBuffered() }
    guard waiting == 0 else { throw RawHTTPConnection.Failure(description: "\(waiting) \(what) got nothing in 10 s") }
    return (first, keptBytes)
}

/// True once the bytes hold a `data:` line ended by the blank line that closes an event (the
/// stream arrives in HTTP chunks, so the framing sits between events).
/// Scanned as bytes: Foundation's `range(of:)` bridges through NSString and cost the fan-out
/// client milliseconds per round at 1,000 streams.
func containsCompleteEvent(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    guard let data = ByteSearch.offset(past: dataLinePrefix, in: bytes, from: 0) else { return false }
    return ByteSearch.offset(past: blankLine, in: bytes, from: data) != nil
}

func containsCompleteEvent(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBufferPointer(containsCompleteEvent) }

private let dataLinePrefix = Array("data: ".utf8)
private let blankLine = Array("\n\n".utf8)

/// The offsets just past each occurrence of `needle` in `bytes`.
func byteOccurrences(of needle: String, in bytes: [UInt8]) -> [Int] {
    let pattern = Array(needle.utf8)
    return bytes.withUnsafeBufferPointer { haystack in
        var found: [Int] = []
        var position = 0
        while let end = ByteSearch.offset(past: pattern, in: haystack, from: position) {
            found.append(end)
            position = end
        }
        return found
    }
}


/// (6b) One commit, many parked long-polls (`subscribers` of them, on one channel of a real
/// scorebookd): time until the last one has its answer. Each round parks them all again after
/// the cursor of the last commit.
func longPollFanOut(_ options: BenchOptions, _ backend: BenchBackend) async throws -> [String: JSONValue] {
    OpenFileLimit.raiseToMaximum()
    let daemon = try pushDaemon("longpoll", backend, connections: options.subscribers)
    let control = try RawHTTPConnection(port: daemon.port)
    let (_, created) = try control.request("POST", daemon.environmentPath + "/tokens/create", token: daemon.token,
                                           body: Array(#"{"apnsEnvironment":"development"}"#.utf8))
    guard let url = try JSONValue.parse(created)["webcourierURL"]?.stringValue, let path = URL(string: url)?.path else {
        throw RawHTTPConnection.Failure(description: "tokens/create failed")
    }
    let waiters = try (0..<options.subscribers).map {
        try RawHTTPConnection(port: daemon.port, source: RawHTTPConnection.loopbackSource(forConnection: $0))
    }
    let readiness = try ReadinessSet(waiters)
    let writer = try RawHTTPConnection(port: daemon.port)
    var cursor: String?
    var lastArrivals: [Double] = []
    var serverLastWrites: [Double] = []
    var floor = FloorSamples()
    let loopbackFloor = try LoopbackFloor(pairs: waiters.count, clientNice: options.clientNice)
    defer { loopbackFloor.stop() }
    let rounds = max(5, options.rounds / 10)
    for round in 0..<rounds {
        // Always a `since` (empty at first): a poll without one is answered bare, one at a time, and is not parked.
        let query = "?timeout=60&since=" + (cursor.map { $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0 } ?? "")
        for waiter in waiters { try waiter.sendRequest("GET", path + query, token: daemon.token) }
        // Parked: the daemon counts them as waiters (bounded wait).
        let parkedBy = now() + 30
        while now() < parkedBy {
            let (_, metrics) = try control.request("GET", "/metrics", token: nil)
            let text = String(decoding: metrics, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("scorebookd_waiters ") }),
               let count = Double(line.split(separator: " ").last ?? ""), Int(count) >= waiters.count { break }
            usleep(50_000)
        }
        // A parked long-poll's head was written when it parked: read the heads now, so the timed
        // round reads only the answers (as the SSE rounds read only the events).
        for waiter in waiters { while waiter.fillAvailable() {} }
        let body = modifyBody(zone: "Bench", records: [benchRecord(round)], operation: "forceReplace")
        let start = now()
        _ = try writer.request("POST", daemon.databasePath + "/records/modify", token: daemon.token, body: body)
        let text = try awaitFirstAnswerOnAll(waiters, readiness: readiness, start: start, clientNice: options.clientNice)
        lastArrivals.append((now() - start) * 1000)
        serverLastWrites.append(try serverLastDeliveryMilliseconds(control))
        // The same writes (the answer's body) with no server, while the long-polls are not parked.
        floor.append(try loopbackFloor.round(bytes: text.utf8.count))
        guard let range = text.range(of: #""cursor":""#) else {
            throw RawHTTPConnection.Failure(description: "a long-poll answer without a cursor")
        }
        cursor = String(text[range.upperBound...].prefix { $0 != "\"" })
    }
    _ = try daemon.stop()
    if !daemon.directory.isEmpty { try? FileManager.default.removeItem(atPath: daemon.directory) }
    let last = Stats(samples: lastArrivals), server = Stats(samples: serverLastWrites)
    return [
        "waiters": .int(Int64(waiters.count)), "rounds": .int(Int64(rounds)), "clientNice": .int(Int64(options.clientNice)),
        "lastAnswerMillisecondsMedian": .double(last.median), "lastAnswerMillisecondsP99": .double(last.p99),
        "serverLastAnswerMillisecondsMedian": .double(server.median), "serverLastAnswerMillisecondsP99": .double(server.p99),
    ].merging(floor.figures(pairs: loopbackFloor.pairs, server: server, client: last)) { $1 }
}

/// Waits until every connection holds a whole long-poll answer (at most 10 s); returns the first
/// connection's answer body (chunk-framed when the daemon sent it chunked, as parked long-polls
/// are: the JSON inside is one chunk). Each connection's head, read before the round, is still in
/// its buffer, so an answer with a length is measured against its head's `Content-Length`.
func awaitFirstAnswerOnAll(_ connections: [RawHTTPConnection], readiness: ReadinessSet? = nil, start: Double,
                           clientNice: Int32 = 0) throws -> String {
    let kept = try awaitOnAll(connections, readiness: readiness, start: start, what: "long-polls", keeping: 0,
                              clientNice: clientNice, isComplete: isWholeAnswer).kept
    let text = String(decoding: kept, as: UTF8.self)
    return text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? text
}

private let lastChunk = Array("\r\n0\r\n\r\n".utf8)

/// Whether `bytes` (a head and what followed it) hold a whole answer. Bytes first (the client
/// must stay cheaper than the server it measures): a chunked answer is whole once the last chunk
/// arrived; a JSON body never ends that way.
func isWholeAnswer(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    if bytes.count > lastChunk.count, memcmp(bytes.baseAddress! + bytes.count - lastChunk.count, lastChunk, lastChunk.count) == 0 { return true }
    let text = String(decoding: bytes, as: UTF8.self)
    guard let split = text.range(of: "\r\n\r\n"),
          text[..<split.lowerBound].range(of: "transfer-encoding: chunked", options: .caseInsensitive) == nil else { return false }
    guard let length = text.range(of: "content-length: ", options: .caseInsensitive),
          let count = Int(text[length.upperBound...].prefix { $0.isNumber })
    else { return false }
    return text.utf8.count - text.utf8.distance(from: text.utf8.startIndex, to: split.upperBound) >= count
}
