import Foundation
import RecordModel
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// (11) The soak: a real release `scorebookd` on SQLite under the mixed load of three users for
// `--minutes` (default 10): per user a writer (batches of 20–60 creates, `forceUpdate`s and
// `forceDelete`s, paced to `writeRate` records a second), a `records/changes` reader following
// its token, lookups of ten records, and a courier long-poll; one event stream; asset round
// trips of 10 KB–2 MB. `--parts` runs a subset (writers,feeds,lookups,couriers,stream,assets), to
// tell which part grows, or adds `webhooks`: one endpoint taking every change, delivered to a
// receiver in this process (the daemon runs with `--allow-private-webhooks`), which must have
// every change the writers made by the end. Every `window` seconds it samples the daemon's resident memory
// (`VmRSS`, `RssAnon`) and CPU time and the window's latencies; at the end every feed must hold
// exactly the records its writer had acknowledged.
//
// Flat means: the resident size at the end is at most 1.1× the size after warm-up (five minutes,
// or half a shorter run) plus 16 MB, and the last window's p99 latency is at most 1.5× the first's.

/// What the load's threads tell the sampler: counts, latencies of the current window, failures.
final class SoakLedger: Sendable {
    struct State {
        var latencies: [Double] = []
        var counts: [String: Int] = [:]
        var failures: [String] = []
        var stopping = false
    }

    private let state = Mutex(State())

    var stopping: Bool { state.withLock { $0.stopping } }
    func stop() { state.withLock { $0.stopping = true } }

    /// One request of `part` that took `milliseconds` and moved `items` (records, bytes).
    func record(_ part: String, milliseconds: Double, items: Int = 1) {
        state.withLock {
            $0.latencies.append(milliseconds)
            $0.counts[part, default: 0] += items
        }
    }

    /// Items `part` moved, without a latency (a long-poll's wait is no request time).
    func count(_ part: String, items: Int) { state.withLock { $0.counts[part, default: 0] += items } }

    func fail(_ text: String) { state.withLock { if $0.failures.count < 100 { $0.failures.append(text) } else { $0.failures[99] = text } } }

    /// The window's latencies (the window restarts) and the totals so far.
    func takeWindow() -> (latencies: [Double], counts: [String: Int]) {
        state.withLock { state in
            defer { state.latencies.removeAll(keepingCapacity: true) }
            return (state.latencies, state.counts)
        }
    }

    var failures: [String] { state.withLock { $0.failures } }
}

/// A user's live record names: its writer adds and removes, its lookups read.
final class SoakNames: Sendable {
    private let names = Mutex<[String]>([])
    func set(_ live: [String]) { names.withLock { $0 = live } }
    func sample(_ count: Int) -> [String] {
        names.withLock { names in names.isEmpty ? [] : (0..<count).map { _ in names.randomElement()! } }
    }
}

/// One user of the soak: its token and courier.
final class SoakUser: Sendable {
    let index: Int
    let token: String
    let courierPath: String
    let names = SoakNames()
    /// The writer's acknowledged live names at the end, and the feed reader's.
    let acknowledged = Mutex<Set<String>>([])
    let followed = Mutex<Set<String>>([])

    init(index: Int, token: String, courierPath: String) {
        self.index = index
        self.token = token
        self.courierPath = courierPath
    }
}

func soak(_ options: BenchOptions) async throws -> [String: JSONValue] {
    let seconds = options.soakMinutes * 60
    let window = seconds >= 600 ? 30.0 : max(5, seconds / 20)
    let warmUp = min(300, seconds / 2)
    let parts = options.soakParts
    let directory = temporaryDirectory("soak")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let daemon = try DaemonUnderTest(directory: directory, extraArguments: ["--rate-limit", "1000000"]
                                         + (parts.contains(.webhooks) ? ["--allow-private-webhooks"] : []))
    let receiver = parts.contains(.webhooks) ? try BenchReceiver() : nil
    defer { receiver?.stop() }
    if let receiver {
        _ = try Subprocess.run(try siblingBinary("scorebookd"), ["webhook", "add", receiver.url] + daemon.storeArguments)
    }
    let pid = daemon.process.pid
    let control = try RawHTTPConnection(port: daemon.port)
    var users: [SoakUser] = []
    for index in 0..<3 {
        let token = index == 0 ? daemon.token : try DaemonUnderTest.createUser("soak\(index)", storeArguments: daemon.storeArguments)
        let target = SoakTarget(port: daemon.port, token: token, databasePath: daemon.databasePath, environmentPath: daemon.environmentPath)
        try createZone("Soak", on: target, control)
        try createZone("Pictures", on: target, control)
        try subscribe(target, zone: "Soak", recordType: "Soak")
        let (_, created) = try control.request("POST", daemon.environmentPath + "/tokens/create", token: token,
                                               body: Array(#"{"apnsEnvironment":"development"}"#.utf8))
        guard let url = try JSONValue.parse(created)["webcourierURL"]?.stringValue, let path = URL(string: url)?.path else {
            throw RawHTTPConnection.Failure(description: "tokens/create failed")
        }
        users.append(SoakUser(index: index, token: token, courierPath: path))
    }
    let ledger = SoakLedger()
    let path = daemon.databasePath
    let port = daemon.port
    var threads: [Thread] = []
    let finished = Mutex(0)
    func start(_ name: String, _ body: @escaping @Sendable () throws -> Void) {
        let thread = Thread {
            do { try body() } catch { ledger.fail("\(name): \(error)") }
            finished.withLock { $0 += 1 }
        }
        thread.stackSize = 1 << 22
        threads.append(thread)
        thread.start()
    }
    for user in users {
        if parts.contains(.writers) {
            start("writer \(user.index)") { try soakWriter(user, port: port, path: path, ledger: ledger) }
        }
        if parts.contains(.feeds) {
            start("feed \(user.index)") { try soakFeedReader(user, port: port, path: path, ledger: ledger) }
        }
        if parts.contains(.lookups) {
            start("lookups \(user.index)") { try soakLookups(user, port: port, path: path, ledger: ledger) }
        }
        if parts.contains(.couriers) {
            start("courier \(user.index)") { try soakCourier(user, port: port, ledger: ledger) }
        }
    }
    if parts.contains(.stream) {
        let target = SoakTarget(port: port, token: users[0].token, databasePath: path, environmentPath: daemon.environmentPath)
        start("stream") { try soakStream(target, ledger: ledger) }
    }
    if parts.contains(.assets) {
        let user = users[1]
        start("assets") { try soakAssets(user, port: port, path: path, directory: directory, ledger: ledger) }
    }

    struct Sample { var at: Double; var resident: Int; var anonymous: Int; var cpu: Double; var p50: Double; var p99: Double; var counts: [String: Int] }
    var samples: [Sample] = []
    let started = now()
    let startCPU = processCPUSeconds(pid: pid)
    while now() - started < seconds {
        let next = started + Double(samples.count + 1) * window
        while now() < min(next, started + seconds) { usleep(100_000) }
        var (latencies, counts) = ledger.takeWindow()
        if let receiver { counts["webhookEvents"] = receiver.count }
        let memory = soakMemory(of: pid)
        let stats = Stats(samples: latencies)
        samples.append(Sample(at: now() - started, resident: memory.resident, anonymous: memory.anonymous, cpu: processCPUSeconds(pid: pid),
                              p50: stats.median, p99: stats.p99, counts: counts))
        if !options.json {
            FileHandle.standardError.write(Data(String(format: "soak: %4.0f s  rss %6.1f MB  anon %6.1f MB  p50 %6.1f ms  p99 %7.1f ms  records %d\n",
                                                       samples.last!.at, Double(memory.resident) / 1_048_576, Double(memory.anonymous) / 1_048_576,
                                                       stats.median, stats.p99, counts["records", default: 0]).utf8))
        }
    }
    let cpuUnderLoad = processCPUSeconds(pid: pid) - startCPU
    ledger.stop()
    // The load's threads end within their own bounded waits (a long-poll's timeout at most).
    let stopBy = now() + 60
    while finished.withLock({ $0 }) < threads.count && now() < stopBy { usleep(100_000) }
    // Every change the writers made reaches the webhook receiver (at least once), within a minute.
    var webhookShortfall = 0
    if let receiver {
        let changes = ledger.takeWindow().counts["records", default: 0]
        let drainBy = now() + 60
        while receiver.count < changes && now() < drainBy { usleep(100_000) }
        webhookShortfall = max(0, changes - receiver.count)
        if webhookShortfall > 0 { ledger.fail("webhooks: \(webhookShortfall) of \(changes) changes not delivered a minute after the load") }
    }
    // Idle: what the daemon gives back once the load has stopped.
    usleep(10_000_000)
    let idle = soakMemory(of: pid)
    let exit = try daemon.stop()

    var mismatched: [String] = []
    if parts.contains(.writers) && parts.contains(.feeds) {
        for user in users {
            let acknowledged = user.acknowledged.withLock { $0 }, followed = user.followed.withLock { $0 }
            if acknowledged != followed {
                mismatched.append("user \(user.index): \(acknowledged.subtracting(followed).count) acknowledged not in the feed, "
                    + "\(followed.subtracting(acknowledged).count) in the feed not acknowledged")
            }
        }
    }
    let atWarmUp = samples.first { $0.at >= warmUp - 0.5 } ?? samples[samples.count / 2]
    let last = samples.last!
    let firstAfterWarmUp = samples.first { $0.at > warmUp + 0.5 } ?? last
    let recordsAfterWarmUp = last.counts["records", default: 0] - atWarmUp.counts["records", default: 0]
    let megabytes = { (bytes: Int) in Double(bytes) / 1_048_576 }
    let records = last.counts["records", default: 0]
    let flatBound = 1.1 * Double(atWarmUp.resident) + 16 * 1_048_576
    var figures: [String: JSONValue] = [
        "minutes": .double(options.soakMinutes),
        "parts": .string(SoakPart.names.filter { parts.contains($0.1) }.map(\.0).joined(separator: ",")),
        "residentMegabytesAtWarmUp": .double(megabytes(atWarmUp.resident)),
        "residentMegabytesEnd": .double(megabytes(last.resident)),
        "anonymousMegabytesAtWarmUp": .double(megabytes(atWarmUp.anonymous)),
        "anonymousMegabytesEnd": .double(megabytes(last.anonymous)),
        "residentMegabytesIdleAfter": .double(megabytes(idle.resident)),
        "residentMegabytesPeakWindow": .double(megabytes(samples.map(\.resident).max() ?? 0)),
        "flat": .bool(Double(last.resident) <= flatBound),
        "growthBytesPerRecordAfterWarmUp": .double(recordsAfterWarmUp > 0 ? Double(last.resident - atWarmUp.resident) / Double(recordsAfterWarmUp) : 0),
        "p99MillisecondsFirstWindow": .double(samples.first!.p99),
        "p99MillisecondsFirstWindowAfterWarmUp": .double(firstAfterWarmUp.p99),
        "p99MillisecondsLastWindow": .double(last.p99),
        "recordsWritten": .int(Int64(records)),
        "daemonCPUMicrosecondsPerRecordWritten": .double(records > 0 ? cpuUnderLoad / Double(records) * 1e6 : 0),
        "failures": .int(Int64(ledger.failures.count + mismatched.count)),
        "exitStatus": .int(Int64(exit.status)),
        "databaseMegabytes": .double(megabytes(directorySize(directory))),
        "windows": .array(samples.map { sample in
            ["seconds": .double(sample.at.rounded()), "residentMegabytes": .double((megabytes(sample.resident) * 10).rounded() / 10),
             "anonymousMegabytes": .double((megabytes(sample.anonymous) * 10).rounded() / 10),
             "p50Milliseconds": .double((sample.p50 * 10).rounded() / 10), "p99Milliseconds": .double((sample.p99 * 10).rounded() / 10)]
        }),
    ]
    for (part, count) in last.counts { figures["count_" + part] = .int(Int64(count)) }
    if let receiver { figures["webhookEventsReceived"] = .int(Int64(receiver.count)) }
    if !ledger.failures.isEmpty || !mismatched.isEmpty {
        figures["failureSamples"] = .array((mismatched + ledger.failures.prefix(5)).map { .string($0) })
    }
    return figures
}

struct SoakTarget: BenchTarget {
    let port: Int
    let token: String
    let databasePath: String
    let environmentPath: String
}

/// `VmRSS` and `RssAnon` of a process, in bytes.
func soakMemory(of pid: pid_t) -> (resident: Int, anonymous: Int) {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return (0, 0) }
    func kilobytes(_ key: String) -> Int {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return 0 }
        return Int(line.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
    }
    return (kilobytes("VmRSS") * 1024, kilobytes("RssAnon") * 1024)
}

/// Records a second each writer sends: three writers together about the issue's mixed load.
private let soakWriteRate = 300.0

private func soakRecord(_ name: String, _ serial: Int) -> JSONValue {
    ["recordName": .string(name), "recordType": "Soak", "fields": [
        "name": ["value": .string("Player \(serial) of the soak league, round robin")],
        "value": ["value": .int(Int64(serial))],
        "note": ["value": .string("a note of moderate length to bring it to size")],
    ]]
}

private func soakWriter(_ user: SoakUser, port: Int, path: String, ledger: SoakLedger) throws {
    let connection = try RawHTTPConnection(port: port)
    var live: [String] = []
    var serial = 0
    let started = now()
    var sent = 0
    while !ledger.stopping {
        let count = Int.random(in: 20...60)
        var operations: [JSONValue] = []
        var used = Set<String>()
        var created: [String] = [], deleted = Set<String>()
        for _ in 0..<count {
            let roll = Double.random(in: 0..<1)
            if live.count < 200 || roll < 0.5 {
                serial += 1
                let name = "Soak|~|\(user.index)-\(serial)-3B7D-4BAD-9BDD-2B0D7B3DCB6D"
                used.insert(name)
                created.append(name)
                operations.append(["operationType": "create", "record": soakRecord(name, serial)])
            } else if let name = live.randomElement(), !used.contains(name) {
                used.insert(name)
                if roll < 0.8 {
                    serial += 1
                    operations.append(["operationType": "forceUpdate", "record": soakRecord(name, serial)])
                } else {
                    deleted.insert(name)
                    operations.append(["operationType": "forceDelete", "record": ["recordName": .string(name)]])
                }
            }
        }
        let body = JSONValue.object(["zoneID": ["zoneName": "Soak"], "atomic": true, "operations": .array(operations)]).serialized()
        let begun = now()
        let (status, answer) = try connection.request("POST", path + "/records/modify", token: user.token, body: body)
        let elapsed = (now() - begun) * 1000
        guard status == 200, byteOccurrences(of: "serverErrorCode", in: answer).isEmpty else {
            ledger.fail("writer \(user.index): \(status) \(String(decoding: answer.prefix(200), as: UTF8.self))")
            continue
        }
        ledger.record("records", milliseconds: elapsed, items: operations.count)
        if !deleted.isEmpty { live.removeAll { deleted.contains($0) } }
        live += created
        user.names.set(live)
        sent += operations.count
        // Paced: sleep until this writer is back at its rate.
        let due = started + Double(sent) / soakWriteRate
        // Read the clock once: between two reads the wait may have passed (a negative wait traps).
        let wait = due - now()
        if wait > 0 { usleep(useconds_t(min(wait, 10) * 1e6)) }
    }
    user.acknowledged.withLock { $0 = Set(live) }
}

private func soakFeedReader(_ user: SoakUser, port: Int, path: String, ledger: SoakLedger) throws {
    let connection = try RawHTTPConnection(port: port)
    var token: String?
    var live = Set<String>()
    /// After the load stops, one more pass to the end of the feed.
    var finalPass = false
    while true {
        var request: [String: JSONValue] = ["zoneID": ["zoneName": "Soak"], "resultsLimit": 400]
        if let token { request["syncToken"] = .string(token) }
        let begun = now()
        let (status, answer) = try connection.request("POST", path + "/records/changes", token: user.token, body: JSONValue.object(request).serialized())
        let elapsed = (now() - begun) * 1000
        guard status == 200 else {
            ledger.fail("feed \(user.index): \(status)")
            usleep(250_000)
            continue
        }
        let page = try JSONValue.parse(answer)
        let records = page["records"]?.arrayValue ?? []
        for record in records {
            guard let name = record["recordName"]?.stringValue else { continue }
            if record["deleted"]?.boolValue == true { live.remove(name) } else { live.insert(name) }
        }
        ledger.record("feedRecords", milliseconds: elapsed, items: records.count)
        token = page["syncToken"]?.stringValue ?? token
        if page["moreComing"]?.boolValue == true { continue }
        if finalPass { break }
        if ledger.stopping {
            // The writer may still be finishing its last batch: let it, then read to the end.
            usleep(2_000_000)
            finalPass = true
            continue
        }
        usleep(250_000)
    }
    user.followed.withLock { $0 = live }
}

private func soakLookups(_ user: SoakUser, port: Int, path: String, ledger: SoakLedger) throws {
    let connection = try RawHTTPConnection(port: port)
    while !ledger.stopping {
        let names = user.names.sample(10)
        if names.isEmpty {
            usleep(100_000)
            continue
        }
        let body = JSONValue.object(["zoneID": ["zoneName": "Soak"], "records": .array(names.map { ["recordName": .string($0)] })]).serialized()
        let begun = now()
        let (status, _) = try connection.request("POST", path + "/records/lookup", token: user.token, body: body)
        guard status == 200 else {
            ledger.fail("lookup \(user.index): \(status)")
            continue
        }
        ledger.record("lookups", milliseconds: (now() - begun) * 1000)
        usleep(50_000)
    }
}

/// Long-polls the user's courier from its cursor with a short timeout, as the CLI's watcher does.
private func soakCourier(_ user: SoakUser, port: Int, ledger: SoakLedger) throws {
    let connection = try RawHTTPConnection(port: port)
    var cursor: String?
    while !ledger.stopping {
        // `since=` even before the first cursor: a poll without it is CloudKit JS's bare form.
        let query = "?timeout=5&since=" + (cursor.map { $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0 } ?? "")
        try connection.sendRequest("GET", user.courierPath + query, token: nil)
        let (status, _, answer) = try connection.readResponseAndHead()
        guard status == 200, let page = try? JSONValue.parse(answer) else {
            ledger.fail("courier \(user.index): \(status)")
            usleep(250_000)
            continue
        }
        ledger.count("courierNotifications", items: page["notifications"]?.arrayValue?.count ?? 0)
        cursor = page["cursor"]?.stringValue ?? cursor
    }
}

/// One event stream, read as it comes and dropped.
private func soakStream(_ target: SoakTarget, ledger: SoakLedger) throws {
    let stream = try openEventStream(target)
    while !ledger.stopping {
        guard (try? stream.fill(timeoutMilliseconds: 1000)) != nil else { continue }
        let bytes = stream.drain()
        ledger.count("streamBytes", items: bytes.count)
    }
}

/// Uploads a file of 10 KB–2 MB, attaches it to a record, downloads it back, every half second.
private func soakAssets(_ user: SoakUser, port: Int, path: String, directory: String, ledger: SoakLedger) throws {
    let connection = try RawHTTPConnection(port: port)
    var round = 0
    while !ledger.stopping {
        round += 1
        let size = Int.random(in: 10_000...2_000_000)
        let bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: size)
        let record = "Picture|~|soak-\(round % 50)"
        let begun = now()
        let ticket: JSONValue = ["zoneID": ["zoneName": "Pictures"], "tokens": [["recordName": .string(record), "fieldName": "image"]]]
        let (status, answer) = try connection.request("POST", path + "/assets/upload", token: user.token, body: ticket.serialized())
        guard status == 200, let url = try JSONValue.parse(answer)["tokens"]?.arrayValue?.first?["url"]?.stringValue,
              let uploadPath = URLComponents(string: url)?.percentEncodedPath
        else {
            ledger.fail("assets/upload: \(status)")
            usleep(500_000)
            continue
        }
        let upload = try RawHTTPConnection(port: port)
        try upload.send(Array("POST \(uploadPath) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: \(size)\r\n\r\n".utf8) + bytes)
        let (uploaded, receipt) = try upload.readResponse()
        guard uploaded == 200, let singleFile = try JSONValue.parse(receipt)["singleFile"] else {
            ledger.fail("upload: \(uploaded)")
            continue
        }
        let attach: JSONValue = ["zoneID": ["zoneName": "Pictures"], "operations": [["operationType": "forceReplace", "record": [
            "recordName": .string(record), "recordType": "Picture", "fields": ["image": ["type": "ASSETID", "value": singleFile]],
        ]]]]
        let (saved, savedAnswer) = try connection.request("POST", path + "/records/modify", token: user.token, body: attach.serialized())
        guard saved == 200,
              let download = try JSONValue.parse(savedAnswer)["records"]?.arrayValue?.first?["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue,
              let downloadPath = URLComponents(string: download)?.percentEncodedPath
        else {
            ledger.fail("attach: \(saved)")
            continue
        }
        let (fetched, body) = try RawHTTPConnection(port: port).request("GET", downloadPath, token: nil)
        guard fetched == 200, body.count == size else {
            ledger.fail("download: \(fetched), \(body.count) of \(size) bytes")
            continue
        }
        ledger.record("assetBytes", milliseconds: (now() - begun) * 1000, items: size)
        usleep(500_000)
    }
}
