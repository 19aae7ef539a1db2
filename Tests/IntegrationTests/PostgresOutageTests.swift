import Foundation
import RecordModel
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// PostgreSQL stopped under a serving daemon: requests answer `503 TRY_AGAIN_LATER` with
/// `retryAfter` (never hang), the daemon stays up, and it serves again once PostgreSQL is back.
final class PostgresOutageTests: XCTestCase {
    /// A cluster of the test's own (it is stopped and started), a daemon on it and a user's token.
    func startOnDedicatedCluster() throws -> (PostgresTestCluster, DaemonProcess, String) {
        if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
        let cluster = try PostgresTestCluster.startDedicated()
        do {
            let daemon = try DaemonProcess.start(postgresURL: try cluster.createDatabase())
            return (cluster, daemon, try daemon.createUser("alice"))
        } catch {
            cluster.stop()
            throw error
        }
    }

    func testRequestsAnswerTryAgainLaterWhilePostgreSQLIsDownAndRecoverAfter() throws {
        let (cluster, daemon, token) = try startOnDedicatedCluster()
        defer { cluster.stop() }
        defer { daemon.kill() }
        let zones = "/database/1/iCloud.scorebook.tests/development/private/zones/list"
        XCTAssertEqual(try daemon.get(zones, token: token).status, 200)

        try cluster.stopServer()
        let started = Date()
        let down = try daemon.request("GET", zones, token: token, timeout: 30).parsed()
        XCTAssertEqual(down.status, 503, down.body.serializedString())
        XCTAssertEqual(down.body["serverErrorCode"], "TRY_AGAIN_LATER")
        XCTAssertNotNil(down.body["retryAfter"]?.int64Value)
        XCTAssertLessThan(Date().timeIntervalSince(started), 15, "bounded, not a hang")
        XCTAssertEqual(try daemon.get("/health", token: nil).status, 200, "the daemon stays up")
        XCTAssertTrue(daemon.isRunning)

        try cluster.startServer()
        var status = 0
        for _ in 0..<40 where status != 200 {
            status = try daemon.request("GET", zones, token: token, timeout: 30).parsed().status
            if status != 200 { Thread.sleep(forTimeInterval: 0.5) }
        }
        XCTAssertEqual(status, 200, "serves again once PostgreSQL is back")
    }

    /// A PostgreSQL restart in the middle of a sync run: a sync started while the database is
    /// down (503 TRY_AGAIN_LATER, which the CLI waits out) completes once it is back, and the
    /// edit reaches the other machine; the daemon never stops.
    func testASyncRunningWhilePostgreSQLRestartsCompletesAndLosesNothing() throws {
        let (cluster, daemon, token) = try startOnDedicatedCluster()
        defer { cluster.stop() }
        defer { daemon.kill() }
        let laptop = CLIMachine("laptop"), phone = CLIMachine("phone")
        try laptop.login(daemon, token: token)
        try phone.login(daemon, token: token)
        try laptop.run("person", "add", "Ann")
        try laptop.sync()
        XCTAssertEqual(try phone.sync().received, 1)

        try cluster.stopServer()
        try laptop.run("person", "add", "Bob")
        let sync = try BackgroundCLI(["--store", laptop.storePath, "sync", "--json"])
        Thread.sleep(forTimeInterval: 3)
        XCTAssertTrue(daemon.isRunning)
        try cluster.startServer()
        XCTAssertTrue(sync.wait(timeout: 60), "the sync finishes once PostgreSQL is back")
        XCTAssertEqual(sync.process.terminationStatus, 0, sync.stderr.text)
        XCTAssertEqual(try phone.sync().received, 1, "Bob, added while PostgreSQL was down, reaches the phone")
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())
    }
}

/// PostgreSQL restarted, crashed and hung under two daemons with writers and a long-poll: every
/// request answers within the request deadline plus one second (`503 TRY_AGAIN_LATER` with
/// `retryAfter` while the database cannot serve), nothing acknowledged is lost, both daemons serve
/// again within 2 s of PostgreSQL answering, a write on one wakes a long-poll held by the other
/// after each outage, and SIGTERM ends a daemon within its grace plus one second while PostgreSQL
/// is gone.
final class PostgresOutageUnderLoadTests: PushTestCase {
    var second: DaemonProcess!
    var cluster: PostgresTestCluster!
    /// `--shutdown-grace` of both daemons.
    let grace = 2
    /// The request deadline plus one second.
    let answerBound: TimeInterval = 11

    override func setUpWithError() throws {
        if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
        // Durable: a crash (stop -m immediate) of the throw-away clusters' fast settings loses
        // the last commits PostgreSQL itself acknowledged.
        cluster = try PostgresTestCluster.startDedicated(durable: true)
        let url = try cluster.createDatabase()
        daemon = try DaemonProcess.start(postgresURL: url, extraArguments: ["--shutdown-grace", String(grace)])
        second = try DaemonProcess.start(postgresURL: url, extraArguments: ["--shutdown-grace", String(grace)])
        token = try daemon.createUser("alice")
    }

    override func tearDownWithError() throws {
        second?.kill()
        second = nil
        try super.tearDownWithError()
        cluster?.stop()
    }

    var signalType: String { "Signal" }

    /// Writes on `target` until one is saved (bounded by `within` seconds); returns when it was.
    func firstSuccessfulWrite(on target: DaemonProcess, within: TimeInterval) -> Date? {
        let end = Date().addingTimeInterval(within)
        for attempt in 0..<1000 where Date() < end {
            let body: JSONValue = [
                "zoneID": ["zoneName": .string(zone)],
                "operations": [["operationType": "create", "record": record("probe-\(target.port)-\(UUID().uuidString)-\(attempt)", "Probe")]],
            ]
            if let answer = try? target.post(path("records/modify"), token: token, json: body.serializedString()), answer.status == 200 {
                return Date()
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return nil
    }

    /// Takes PostgreSQL away with `outage` (which returns once it answers again), then checks
    /// recovery on both daemons and that a write through the second wakes a long-poll on the
    /// first that was parked all along.
    func survive(_ name: String, load: WriteLoad, courier: String, cursor: inout String, outage: () throws -> Void) throws -> OutageFigures {
        let before = load.answerCount
        let since = cursor
        let waiting = background { [client] in try client.poll(courier, since: since, timeout: 50, httpTimeout: 60) }
        // Parked before the outage, not merely sent: a poll still reading its channel when the
        // database stops is answered 503 at the request deadline, as any request then is (a
        // fixed second was not always enough under the full suite's load).
        guard try waitForWaiters(1, on: daemon, within: 10) >= 1 else {
            XCTFail("\(name): the long-poll did not park on the first daemon within 10 s")
            throw DaemonError("no parked long-poll")
        }
        try outage()
        let back = Date()
        guard let first = firstSuccessfulWrite(on: daemon, within: 10), let second = firstSuccessfulWrite(on: second, within: 10) else {
            XCTFail("\(name): a daemon did not serve again within 10 s")
            throw DaemonError("no recovery")
        }
        let recovery = max(first, second).timeIntervalSince(back)
        XCTAssertLessThan(recovery, 2, "\(name): both daemons serve within 2 s of PostgreSQL answering")
        XCTAssertEqual(try daemon.get("/ready", token: nil).status, 200, "\(name): ready again")

        let signal = newName(signalType)
        let body: JSONValue = [
            "zoneID": ["zoneName": .string(zone)], "operations": [["operationType": "create", "record": record(signal, signalType)]],
        ]
        XCTAssertEqual(try self.second.post(path("records/modify"), token: token, json: body.serializedString()).status, 200)
        guard case .success(let answer)? = waiting.wait(timeout: 15) else {
            XCTFail("\(name): the long-poll on the first daemon was not woken by a write through the second")
            throw DaemonError("no wake")
        }
        XCTAssertEqual(answer.notifications.last?["qry"]?["rid"]?.stringValue, signal, "\(name): the write's notification")
        cursor = answer.cursor
        Thread.sleep(forTimeInterval: 1)
        let answers = load.allAnswers[before...]
        return OutageFigures(name: name, requests: answers.count, refused: answers.filter { $0.status == 503 }.count,
                             slowest: answers.map(\.seconds).max() ?? 0, recovery: recovery)
    }

    func testEveryRequestIsAnsweredInTimeThroughRestartCrashAndHangAndTheDaemonsHealAndStop() throws {
        try createZone(zone)
        try subscribe(querySubscription("signals", type: signalType))
        let courier = try createCourier()
        var cursor = try startCursor(courier)
        let load = WriteLoad(path: path("records/modify"), token: token, zone: zone)
        load.start(ports: [daemon.port, second.port, daemon.port, second.port])
        defer { load.stop() }

        var figures: [OutageFigures] = []
        figures.append(try survive("restart -m fast", load: load, courier: courier, cursor: &cursor) {
            try cluster.stopServer()
            try cluster.startServer()
        })
        figures.append(try survive("stop -m immediate for 3 s", load: load, courier: courier, cursor: &cursor) {
            try cluster.stopServer(immediate: true)
            Thread.sleep(forTimeInterval: 1)
            // While it is down: alive, not ready (with a reason), requests refused in time.
            XCTAssertEqual(try daemon.get("/health", token: nil).status, 200)
            let ready = try daemon.get("/ready", token: nil)
            XCTAssertEqual(ready.status, 503)
            XCTAssertEqual(ready.body["status"], "unavailable")
            XCTAssertNotNil(ready.body["reason"]?.stringValue)
            Thread.sleep(forTimeInterval: 2)
            try cluster.startServer()
        })
        figures.append(try survive("SIGSTOP for 12 s", load: load, courier: courier, cursor: &cursor) {
            try cluster.signalServer(SIGSTOP)
            defer { try? cluster.signalServer(SIGCONT) }
            Thread.sleep(forTimeInterval: 12)
        })
        XCTAssertTrue(load.stop(), "every writer's last request was answered")

        let answers = load.allAnswers
        for answer in answers {
            XCTAssertLessThanOrEqual(answer.seconds, answerBound, "an answer within the deadline plus one second (status \(answer.status))")
            XCTAssertTrue([200, 503].contains(answer.status), "200, or 503 while the database cannot serve: \(answer.status)")
            if answer.status == 503 {
                XCTAssertEqual(answer.body?["serverErrorCode"], "TRY_AGAIN_LATER")
                XCTAssertNotNil(answer.body?["retryAfter"]?.int64Value)
            }
        }
        // Every acknowledged write is there, read back in full.
        let names = load.acknowledgedNames
        var found = 0
        for start in stride(from: 0, to: names.count, by: 200) {
            let batch = names[start..<min(start + 200, names.count)]
            let lookup = try call("records/lookup", [
                "zoneID": ["zoneName": .string(zone)], "records": .array(batch.map { ["recordName": .string($0)] }),
            ])
            found += (lookup["records"]?.arrayValue ?? []).filter { $0["recordChangeTag"] != nil }.count
        }
        XCTAssertEqual(found, names.count, "every acknowledged write survives")
        XCTAssertGreaterThan(names.count, 20)
        let metrics = try daemon.request("GET", "/metrics").text
        let refusedLine = metrics.split(separator: "\n").first { $0.hasPrefix("scorebookd_store_unavailable_total ") }
        XCTAssertGreaterThan(Double(refusedLine?.split(separator: " ").last ?? "") ?? 0, 0, "store-unavailable answers are counted")

        // SIGTERM with a request in flight while PostgreSQL is hung (the first daemon), then while
        // it is stopped (the second): each exits 0 within its grace plus one second.
        try cluster.signalServer(SIGSTOP)
        defer { try? cluster.signalServer(SIGCONT) }
        for (target, stopDatabase) in [(daemon!, false), (second!, true)] {
            if stopDatabase {
                try cluster.signalServer(SIGCONT)
                try cluster.stopServer(immediate: true)
            }
            let inFlight = background { [client] in try target.get(client.path("zones/list"), token: client.token) }
            Thread.sleep(forTimeInterval: 0.5)
            let signalled = Date()
            XCTAssertNoThrow(try target.stop(), "SIGTERM: exit 0")
            let seconds = Date().timeIntervalSince(signalled)
            XCTAssertLessThanOrEqual(seconds, TimeInterval(grace + 1), "ended within the grace plus one second")
            print(String(format: "SIGTERM with PostgreSQL %@ and a request in flight: exited after %.2f s", stopDatabase ? "stopped" : "hung", seconds))
            _ = inFlight.wait(timeout: 5)
        }
        for figure in figures { print(figure) }
    }
}
