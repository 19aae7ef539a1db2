import Foundation
import RecordModel
import TestSupport
import XCTest

/// Push across daemons: two `scorebookd serve --database` on one PostgreSQL database; a
/// write through the second wakes the long-polls and event streams held by the first
/// (LISTEN/NOTIFY), and PostgreSQL going away answers `503 TRY_AGAIN_LATER` until it returns.
final class PostgresPushTests: PushTestCase {
    var second: DaemonProcess!

    override func setUpWithError() throws {
        if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
        let url = try PostgresTestCluster.shared().createDatabase()
        daemon = try DaemonProcess.start(postgresURL: url)
        second = try DaemonProcess.start(postgresURL: url)
        token = try daemon.createUser("alice")
    }

    override func tearDownWithError() throws {
        second?.kill()
        second = nil
        try super.tearDownWithError()
    }

    /// Creates a record through the second daemon.
    func createOnSecondDaemon(_ name: String, _ type: String) throws {
        let body: JSONValue = [
            "zoneID": ["zoneName": .string(zone)],
            "operations": [["operationType": "create", "record": record(name, type, ["n": 1])]],
        ]
        let answer = try second.post(path("records/modify"), token: token, json: body.serializedString())
        XCTAssertEqual(answer.status, 200, answer.body.serializedString())
        XCTAssertNil(answer.body["records"]?.arrayValue?.first?["serverErrorCode"], answer.body.serializedString())
    }

    func testALongPollOnOneDaemonIsWokenByAWriteThroughAnother() throws {
        try createZone(zone)
        try subscribe(querySubscription("things", type: "Thing"))
        let courier = try createCourier()
        let cursor = try startCursor(courier)
        let waiting = background { [client] in try client.poll(courier, since: cursor, timeout: 20) }
        Thread.sleep(forTimeInterval: 1)  // the long-poll is waiting on the first daemon
        let name = newName("Thing")
        try createOnSecondDaemon(name, "Thing")
        guard case .success(let answer)? = waiting.wait(timeout: 25) else { return XCTFail("the long-poll did not answer") }
        XCTAssertEqual(answer.notifications.count, 1)
        XCTAssertEqual(answer.notifications.first?["qry"]?["rid"]?.stringValue, name)
        XCTAssertLessThan(answer.elapsed, 5, "woken by the other daemon's commit, not by the 20 s timeout")
    }

    func testAnEventStreamOnOneDaemonGetsAWriteThroughAnother() throws {
        try createZone(zone)
        try subscribe(querySubscription("things", type: "Thing"))
        let courier = try createCourier()
        let stream = try openEventStream(courier)
        XCTAssertEqual(stream.waitForHead(timeout: 10), 200)
        XCTAssertTrue(stream.waitForComment("connected", timeout: 10))
        // Latency from the write's acknowledgement on daemon 2 to the event on daemon 1's stream.
        var latencies: [Double] = []
        for _ in 0..<10 {
            let name = newName("Thing")
            try createOnSecondDaemon(name, "Thing")
            let acknowledged = Date()
            let event = try XCTUnwrap(stream.nextEvent(timeout: 10), "no event for a write through the other daemon")
            latencies.append(Date().timeIntervalSince(acknowledged))
            XCTAssertEqual(try JSONValue.parse(Array(event.data.utf8))["ck"]?["qry"]?["rid"]?.stringValue, name)
        }
        latencies.sort()
        print(String(format: "cross-daemon push (ack on daemon 2 -> SSE event on daemon 1): median %.1f ms, max %.1f ms",
                     latencies[latencies.count / 2] * 1000, latencies.last! * 1000))
        XCTAssertLessThan(latencies.last!, 5, "woken by LISTEN/NOTIFY, not by a heartbeat or a timeout")
    }
}
