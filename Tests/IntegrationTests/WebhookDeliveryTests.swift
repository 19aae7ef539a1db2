import Foundation
import RecordModel
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 46: the real daemon delivers to a real receiver on loopback. Every committed change
/// arrives, signed (checked by the receiver's own HMAC), in each zone's commit order, each id at
/// least once and again only after a failure; through a receiver that is down, answers 500, is
/// slower than the timeout, and restarts; through a kill -9 of the daemon; and, on PostgreSQL,
/// through a database restart with two daemons delivering. A rolled-back batch delivers nothing.
final class WebhookDeliveryTests: XCTestCase {
    static let container = "iCloud.scorebook.tests"
    /// Short timings so the suite stays fast: a 500 ms timeout (room for a loaded CI machine), retries
    /// from 50 ms, polls every 50 ms, leases of 3 s.
    static let fastDelivery = ["--allow-private-webhooks", "--webhook-timeout-ms", "500", "--webhook-retry-base-ms", "50",
                               "--webhook-poll-ms", "50", "--webhook-lease-seconds", "3"]

    func path(_ operation: String) -> String { "/database/1/\(Self.container)/development/private/\(operation)" }

    func createZone(_ daemon: DaemonProcess, _ token: String, _ zone: String) throws {
        let body: JSONValue = ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(zone)]]]]]
        XCTAssertEqual(try daemon.post(path("zones/modify"), token: token, json: body.serializedString()).status, 200)
    }

    /// Creates `name` in `zone`; `atomicFailure` adds an update that fails, so an atomic batch rolls back.
    @discardableResult
    func write(_ daemon: DaemonProcess, _ token: String, zone: String, _ name: String, atomicFailure: Bool = false) throws -> Int {
        var operations: [JSONValue] = [["operationType": "create", "record": [
            "recordName": .string(name), "recordType": "Game", "fields": ["name": ["value": .string(name)]]]]]
        if atomicFailure {
            operations.append(["operationType": "update", "record": ["recordName": "missing", "recordType": "Game", "recordChangeTag": "x",
                                                                      "fields": [:]]])
        }
        let body: JSONValue = ["zoneID": ["zoneName": .string(zone)], "atomic": .bool(atomicFailure), "operations": .array(operations)]
        return try daemon.post(path("records/modify"), token: token, json: body.serializedString()).status
    }

    /// Registers the receiver with `scorebookd webhook add` and returns it.
    func addReceiver(_ daemon: DaemonProcess) throws -> WebhookReceiver {
        let added = try DaemonProcess.run("scorebookd", ["webhook", "add", "http://127.0.0.1:1/placeholder", "--container", Self.container]
                                          + daemon.storeArguments)
        XCTAssertEqual(added.status, 0, added.stderr)
        let answer = try JSONValue.parse(added.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        let receiver = try WebhookReceiver(secret: answer["secret"]!.stringValue!)
        // The endpoint's URL names the receiver's port, known only now: register it again and drop the first.
        let id = answer["webhookID"]!.stringValue!
        let secretFile = DaemonProcess.makeTemporaryDirectory(prefix: "secret").appendingPathComponent("secret")
        try Data(answer["secret"]!.stringValue!.utf8).write(to: secretFile)
        let again = try DaemonProcess.run("scorebookd", ["webhook", "add", receiver.url, "--container", Self.container, "--secret-file",
                                                         secretFile.path] + daemon.storeArguments)
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try DaemonProcess.run("scorebookd", ["webhook", "remove", id] + daemon.storeArguments).status, 0)
        return receiver
    }

    /// Waits until the receiver acknowledged every name (bounded).
    func waitForAll(_ names: Set<String>, at receiver: WebhookReceiver, timeout: TimeInterval = 20) {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let acknowledged = Set(receiver.deliveries.filter(\.acknowledged).compactMap { $0.body["data"]?["recordName"]?.stringValue })
            if names.isSubset(of: acknowledged) { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Every name acknowledged, every request verified, each zone's names first acknowledged in
    /// the order written, and an id received again only after some attempt failed.
    /// `storeFailed`: the database went away, so a delivery the receiver acknowledged may not have
    /// been recorded and comes again without the receiver having failed. `failedAttempts`: the
    /// attempts the daemon recorded as failed, which include answers the receiver sent but the
    /// daemon did not have within its timeout (a loaded machine).
    func assertDelivered(_ written: [String: [String]], to receiver: WebhookReceiver, storeFailed: Bool = false, failedAttempts: Int = 0,
                         file: StaticString = #filePath, line: UInt = #line) {
        let deliveries = receiver.deliveries
        XCTAssertTrue(deliveries.allSatisfy(\.verified), "every signature verifies", file: file, line: line)
        XCTAssertEqual(receiver.concurrentDuplicates, [], "no event delivered twice at once", file: file, line: line)
        var firstAcknowledged: [String: [String]] = [:]
        var seen = Set<String>()
        for delivery in deliveries where delivery.acknowledged && seen.insert(delivery.id).inserted {
            guard let zone = delivery.body["data"]?["zone"]?.stringValue, let name = delivery.body["data"]?["recordName"]?.stringValue else { continue }
            firstAcknowledged[zone, default: []].append(name)
        }
        for (zone, names) in written {
            XCTAssertEqual(firstAcknowledged[zone] ?? [], names, "zone \(zone): every change, in commit order", file: file, line: line)
        }
        let failures = max(deliveries.filter { !$0.acknowledged }.count, failedAttempts)
        let repeats = deliveries.count - Set(deliveries.map(\.id)).count
        if !storeFailed {
            XCTAssertLessThanOrEqual(repeats, failures, "an id comes again only after a failed attempt", file: file, line: line)
        }
    }

    func testEveryChangeArrivesInZoneOrderThroughErrorsSlownessAndOutages() throws {
        let daemon = try DaemonProcess.start(extraArguments: Self.fastDelivery)
        defer { daemon.kill() }
        let token = try daemon.createUser("alice")
        let receiver = try addReceiver(daemon)
        for zone in ["A", "B"] { try createZone(daemon, token, zone) }
        var written: [String: [String]] = [:]
        var counter = 0
        func writeBoth(_ count: Int) throws {
            for _ in 0..<count {
                for zone in ["A", "B"] {
                    counter += 1
                    let name = "\(zone)-\(counter)"
                    XCTAssertEqual(try write(daemon, token, zone: zone, name), 200)
                    written[zone, default: []].append(name)
                }
            }
        }
        try writeBoth(5)
        receiver.setMode(.fail(500))
        try writeBoth(5)
        Thread.sleep(forTimeInterval: 0.4)
        receiver.setMode(.slow(0.8))  // answers after the 500 ms timeout
        try writeBoth(3)
        // Until an attempt has timed out (a loaded machine may take longer than the timeout to make
        // one): stopping the receiver earlier would cut the slow answer short instead.
        let webhookID = try JSONValue.parse(try DaemonProcess.run("scorebookd", ["webhook", "list", "--json"] + daemon.storeArguments).stdout)
            .arrayValue?.first?["webhookID"]?.stringValue ?? ""
        var timedOut = false
        let timeoutDeadline = Date().addingTimeInterval(20)
        while !timedOut, Date() < timeoutDeadline {
            let failed = try DaemonProcess.run("scorebookd", ["webhook", "deliveries", webhookID, "--failed", "--json"] + daemon.storeArguments)
            timedOut = failed.stdout.contains("no answer within")
            if !timedOut { Thread.sleep(forTimeInterval: 0.2) }
        }
        XCTAssertTrue(timedOut, "an attempt timed out against the slow receiver")
        receiver.setMode(.accept)
        receiver.stop()
        try writeBoth(5)
        XCTAssertEqual(try write(daemon, token, zone: "A", "rolled-back", atomicFailure: true), 200)
        Thread.sleep(forTimeInterval: 0.4)
        try receiver.start()
        try writeBoth(5)
        waitForAll(Set(written.values.joined()), at: receiver)
        let failedAttempts = try JSONValue.parse(
            try DaemonProcess.run("scorebookd", ["webhook", "deliveries", webhookID, "--failed", "--limit", "10000", "--json"] + daemon.storeArguments).stdout
        ).arrayValue?.count ?? 0
        assertDelivered(written, to: receiver, failedAttempts: failedAttempts)
        XCTAssertFalse(receiver.deliveries.contains { $0.body["data"]?["recordName"]?.stringValue == "rolled-back" },
                       "a rolled-back atomic batch delivers nothing")
        XCTAssertTrue(receiver.deliveries.contains { !$0.acknowledged }, "the receiver did fail some attempts")

        // What the operator sees: the failed attempts with their errors, and the counters.
        let list = try DaemonProcess.run("scorebookd", ["webhook", "list", "--json"] + daemon.storeArguments)
        let id = try JSONValue.parse(list.stdout).arrayValue!.first!["webhookID"]!.stringValue!
        let failed = try DaemonProcess.run("scorebookd", ["webhook", "deliveries", id, "--failed", "--json"] + daemon.storeArguments)
        let attempts = try JSONValue.parse(failed.stdout).arrayValue ?? []
        XCTAssertTrue(attempts.contains { $0["status"]?.int64Value == 500 }, failed.stdout)
        XCTAssertTrue(attempts.contains { $0["error"]?.stringValue?.contains("no answer within") == true }, failed.stdout)
        let metrics = String(decoding: try daemon.request("GET", "/metrics").body, as: UTF8.self)
        XCTAssertTrue(metrics.contains("scorebookd_webhook_events_delivered_total "), metrics)
        XCTAssertTrue(metrics.contains("scorebookd_webhook_events_pending 0"), metrics)
    }

    func testAKilledDaemonDeliversEverythingAfterItsRestart() throws {
        let daemon = try DaemonProcess.start(extraArguments: Self.fastDelivery)
        defer { daemon.kill() }
        let token = try daemon.createUser("alice")
        let receiver = try addReceiver(daemon)
        try createZone(daemon, token, "A")
        receiver.setMode(.delay(0.02))  // slow enough to be mid-delivery, quick enough not to time out
        var names: [String] = []
        for index in 0..<40 {
            names.append("k\(index)")
            XCTAssertEqual(try write(daemon, token, zone: "A", "k\(index)"), 200)
        }
        let deadline = Date().addingTimeInterval(10)
        while receiver.deliveries.count < 5 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        daemon.kill()
        let beforeRestart = receiver.deliveries.count
        XCTAssertLessThan(beforeRestart, 40, "killed mid-delivery")
        receiver.setMode(.accept)
        try daemon.restart()
        waitForAll(Set(names), at: receiver)
        let deliveries = receiver.deliveries
        XCTAssertTrue(deliveries.allSatisfy(\.verified))
        var firstSeen: [String] = []
        var seen = Set<String>()
        for delivery in deliveries where seen.insert(delivery.id).inserted {
            if let name = delivery.body["data"]?["recordName"]?.stringValue { firstSeen.append(name) }
        }
        XCTAssertEqual(firstSeen, names, "every change once at least, in commit order, across the kill")
    }

    func testUsersRegisterEndpointsForTheirOwnZonesAndPrivateTargetsAreRefused() throws {
        // No --allow-private-webhooks: loopback targets are refused.
        let daemon = try DaemonProcess.start(extraArguments: ["--webhook-retry-base-ms", "50", "--webhook-poll-ms", "50"])
        defer { daemon.kill() }
        let alice = try daemon.createUser("alice"), bob = try daemon.createUser("bob")
        let create: JSONValue = ["operations": [["operationType": "create", "webhook": ["url": "http://127.0.0.1:9/hook", "fields": "none"]]]]
        let refused = try daemon.post(path("webhooks/modify"), token: alice, json: create.serializedString())
        XCTAssertEqual(refused.status, 200)
        XCTAssertEqual(refused.body["webhooks"]?.arrayValue?.first?["serverErrorCode"]?.stringValue, "BAD_REQUEST", refused.body.serializedString())

        let own: JSONValue = ["operations": [["operationType": "create", "webhook": ["url": "https://hooks.example.com/a", "zoneID": ["zoneName": "A"],
                                                                                  "events": ["deleted"]]]]]
        let created = try daemon.post(path("webhooks/modify"), token: alice, json: own.serializedString()).body["webhooks"]?.arrayValue?.first
        XCTAssertTrue(created?["secret"]?.stringValue?.hasPrefix("whsec_") == true, created?.serializedString() ?? "")
        XCTAssertEqual(created?["zone"]?.stringValue, "A")
        let id = created?["webhookID"]?.stringValue ?? ""
        let listed = try daemon.post(path("webhooks/list"), token: alice, json: "{}").body["webhooks"]?.arrayValue ?? []
        XCTAssertEqual(listed.map { $0["webhookID"]?.stringValue }, [id])
        XCTAssertNil(listed.first?["secret"], "the secret is shown once")
        XCTAssertEqual(try daemon.post(path("webhooks/list"), token: bob, json: "{}").body["webhooks"]?.arrayValue?.count, 0)
        let bobDeletes: JSONValue = ["operations": [["operationType": "delete", "webhook": ["webhookID": .string(id)]]]]
        XCTAssertEqual(try daemon.post(path("webhooks/modify"), token: bob, json: bobDeletes.serializedString()).body["webhooks"]?
            .arrayValue?.first?["serverErrorCode"]?.stringValue, "NOT_FOUND", "another user's endpoint cannot be removed")
        XCTAssertEqual(try daemon.post(path("webhooks/modify"), token: alice, json: bobDeletes.serializedString()).body["webhooks"]?
            .arrayValue?.first?["deleted"], true)

        // An operator's loopback endpoint is accepted, but this daemon refuses to deliver to it, and says why.
        let receiver = try addReceiver(daemon)
        try createZone(daemon, alice, "A")
        XCTAssertEqual(try write(daemon, alice, zone: "A", "r1"), 200)
        let list = try DaemonProcess.run("scorebookd", ["webhook", "list", "--json"] + daemon.storeArguments)
        let hook = try JSONValue.parse(list.stdout).arrayValue!.first!["webhookID"]!.stringValue!
        var errors: [String] = []
        let deadline = Date().addingTimeInterval(10)
        while errors.isEmpty && Date() < deadline {
            let failed = try DaemonProcess.run("scorebookd", ["webhook", "deliveries", hook, "--failed", "--json"] + daemon.storeArguments)
            errors = (try JSONValue.parse(failed.stdout).arrayValue ?? []).compactMap { $0["error"]?.stringValue }
            if errors.isEmpty { Thread.sleep(forTimeInterval: 0.1) }
        }
        XCTAssertTrue(errors.first?.hasPrefix("refused:") == true, "\(errors)")
        XCTAssertTrue(receiver.deliveries.isEmpty)
        XCTAssertFalse(daemon.standardErrorText.contains(receiver.secretForLogCheck), "the secret is never logged")
    }

    func testAnEndpointFailingForTheWholeRetryWindowIsDisabledAndSaysSo() throws {
        // A one-second retry window instead of three days.
        let daemon = try DaemonProcess.start(extraArguments: Self.fastDelivery + ["--webhook-retry-window-seconds", "1"])
        defer { daemon.kill() }
        let token = try daemon.createUser("alice")
        let receiver = try addReceiver(daemon)
        receiver.setMode(.fail(503))
        try createZone(daemon, token, "A")
        XCTAssertEqual(try write(daemon, token, zone: "A", "doomed"), 200)
        var endpoint: JSONValue?
        let deadline = Date().addingTimeInterval(10)
        repeat {
            Thread.sleep(forTimeInterval: 0.1)
            endpoint = try JSONValue.parse(DaemonProcess.run("scorebookd", ["webhook", "list", "--json"] + daemon.storeArguments).stdout).arrayValue?.first
        } while endpoint?["enabled"] != false && Date() < deadline
        XCTAssertEqual(endpoint?["enabled"], false)
        XCTAssertTrue(endpoint?["disabledReason"]?.stringValue?.contains("HTTP 503") == true, endpoint?.serializedString() ?? "")
        XCTAssertEqual(endpoint?["pending"]?.int64Value, 1, "its event waits")
        XCTAssertTrue(daemon.standardErrorText.contains("disabled after"), "logged")
        let metrics = String(decoding: try daemon.request("GET", "/metrics").body, as: UTF8.self)
        XCTAssertTrue(metrics.contains("scorebookd_webhook_endpoints_disabled_total 1"), metrics)

        // Enabled again, with the receiver fixed, the waiting event goes at once.
        receiver.setMode(.accept)
        let id = endpoint!["webhookID"]!.stringValue!
        XCTAssertEqual(try DaemonProcess.run("scorebookd", ["webhook", "enable", id] + daemon.storeArguments).status, 0)
        waitForAll(["doomed"], at: receiver, timeout: 5)
        XCTAssertTrue(receiver.deliveries.contains { $0.acknowledged && $0.body["data"]?["recordName"]?.stringValue == "doomed" })
    }

    func testTwoDaemonsOnPostgreSQLDeliverThroughADatabaseRestart() throws {
        if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
        let cluster = try PostgresTestCluster.startDedicated()
        defer { cluster.stop() }
        let url = try cluster.createDatabase()
        let first = try DaemonProcess.start(postgresURL: url, extraArguments: Self.fastDelivery)
        defer { first.kill() }
        let second = try DaemonProcess.start(postgresURL: url, extraArguments: Self.fastDelivery)
        defer { second.kill() }
        let token = try first.createUser("alice")
        let receiver = try addReceiver(first)
        receiver.setMode(.delay(0.005))  // deliveries overlap, so a double delivery would show
        let zones = ["A", "B", "C"]
        for zone in zones { try createZone(first, token, zone) }
        var written: [String: [String]] = [:]
        func writeRound(_ round: Int) throws {
            for (index, zone) in zones.enumerated() {
                let name = "\(zone)-\(round)"
                XCTAssertEqual(try write(index % 2 == 0 ? first : second, token, zone: zone, name), 200)
                written[zone, default: []].append(name)
            }
        }
        for round in 0..<8 { try writeRound(round) }
        try cluster.stopServer()
        Thread.sleep(forTimeInterval: 1)
        try cluster.startServer()
        // Writes answer again once the daemons reconnect.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, (try? write(first, token, zone: "A", "probe")) != 200 { Thread.sleep(forTimeInterval: 0.2) }
        written["A", default: []].append("probe")
        for round in 8..<16 { try writeRound(round) }
        waitForAll(Set(written.values.joined()), at: receiver, timeout: 30)
        assertDelivered(written, to: receiver, storeFailed: true)
    }
}
