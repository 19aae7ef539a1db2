import Foundation
import RecordModel
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM on the SQLite store with long-polls, an event stream and a request a client never
/// finishes sending: the daemon closes the long-polls and the stream at once (so clients
/// reconnect elsewhere), gives the half-sent request the shutdown grace, and exits 0 within the
/// grace plus one second.
final class DaemonShutdownTests: PushTestCase {
    let grace = 2

    override func setUpWithError() throws {
        daemon = try DaemonProcess.start(extraArguments: ["--shutdown-grace", String(grace)])
        token = try daemon.createUser("alice")
    }

    func testSIGTERMEndsWithinTheGraceWithLongPollsAStreamAndAHalfSentRequestOpen() throws {
        let ready = try daemon.get("/ready", token: nil)
        XCTAssertEqual(ready.status, 200, "the SQLite store answers: ready")
        XCTAssertEqual(ready.body, ["status": "ok"])
        try createZone(zone)
        try subscribe(querySubscription("things", type: "Thing"))
        let courier = try createCourier()
        let cursor = try startCursor(courier)
        let polls = (0..<3).map { _ in background { [client] in try client.poll(courier, since: cursor, timeout: 50, httpTimeout: 60) } }
        let stream = try openEventStream(courier)
        XCTAssertEqual(stream.waitForHead(timeout: 10), 200)
        XCTAssertTrue(stream.waitForComment("connected", timeout: 10))

        // A request whose body never arrives in full: it holds its connection open.
        let slow = try RawHTTP.connectLoopback(port: daemon.port)
        defer { close(slow) }
        let head = "POST \(path("records/modify")) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token!)\r\n"
            + "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"operations\": ["
        let bytes = Array(head.utf8)
        XCTAssertEqual(bytes.withUnsafeBytes { write(slow, $0.baseAddress, $0.count) }, bytes.count)
        Thread.sleep(forTimeInterval: 1)  // the long-polls are parked, the slow request is in flight

        let signalled = Date()
        XCTAssertNoThrow(try daemon.stop(signal: SIGTERM), "SIGTERM: exit 0")
        let seconds = Date().timeIntervalSince(signalled)
        XCTAssertLessThanOrEqual(seconds, TimeInterval(grace + 1), "ended within the grace plus one second")
        XCTAssertGreaterThanOrEqual(seconds, TimeInterval(grace) - 0.5, "the half-sent request was given the grace")
        for poll in polls {
            guard let answered = poll.wait(timeout: 5), let finished = poll.finishedAt else { return XCTFail("a long-poll was not answered") }
            if case .success(let answer) = answered { XCTAssertEqual(answer.notifications.count, 0) }
            XCTAssertLessThan(finished.timeIntervalSince(signalled), 1.5, "long-polls are closed when shutdown starts, not at its end")
        }
        XCTAssertTrue(stream.waitForServerClose(timeout: 1), "the event stream is closed")
    }
}
