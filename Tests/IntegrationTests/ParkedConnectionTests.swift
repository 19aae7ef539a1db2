import Foundation
import RecordModel
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Connections the push hub parks (issue 13): a long-poll is answered from the hub and its
/// keep-alive connection then serves requests as before; an event stream outlives the
/// framework's task for its connection, yet a client that leaves is still noticed.
final class ParkedConnectionTests: PushTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try createZone(zone)
        try subscribe(querySubscription("games", type: "Game", firesOn: ["create"]))
    }

    func testALongPollConnectionServesTheNextRequestsAfterItsAnswerAndItsTimeout() throws {
        let courier = try createCourier()
        let cursor = try startCursor(courier)
        let connection = try KeepAliveConnection(port: daemon.port, token: token)
        defer { connection.close() }

        // Parked, then answered by a commit made through another connection.
        try connection.send("GET", "\(courier)?since=\(percentEncoded(cursor))&timeout=30")
        Thread.sleep(forTimeInterval: 0.3)
        let game = newName("Game")
        try create(game, "Game", ["name": "Azul"])
        let answered = try connection.readResponse(timeout: 10)
        XCTAssertEqual(answered.status, 200)
        let body = try JSONValue.parse(answered.body)
        XCTAssertEqual(body["notifications"]?.arrayValue?.count, 1)
        XCTAssertEqual(body["notifications"]?.arrayValue?.first?["ck"]?["qry"]?["rid"], .string(game))
        let next = try XCTUnwrap(body["cursor"]?.stringValue)

        // The same connection parks again and is answered empty at its 1 s deadline.
        let started = Date()
        try connection.send("GET", "\(courier)?since=\(percentEncoded(next))&timeout=1")
        let empty = try connection.readResponse(timeout: 10)
        let waited = Date().timeIntervalSince(started)
        XCTAssertEqual(empty.status, 200)
        XCTAssertEqual(try JSONValue.parse(empty.body)["notifications"]?.arrayValue?.count, 0)
        XCTAssertEqual(try JSONValue.parse(empty.body)["cursor"]?.stringValue, next)
        XCTAssertGreaterThan(waited, 0.9, "answered at its deadline, not before")
        XCTAssertLessThan(waited, 3, "answered at its deadline, not much after")

        // And it still serves an ordinary request.
        try connection.send("POST", path("zones/list"), body: "{}")
        let zones = try connection.readResponse(timeout: 10)
        XCTAssertEqual(zones.status, 200)
        XCTAssertNotNil(try JSONValue.parse(zones.body)["zones"]?.arrayValue)
    }

    func testAnEventStreamAskedWithConnectionCloseStillStreams() throws {
        let courier = try createCourier()
        let connection = try KeepAliveConnection(port: daemon.port, token: token)
        defer { connection.close() }
        try connection.send("GET", courier, headers: [("Accept", "text/event-stream"), ("Connection", "close")])
        Thread.sleep(forTimeInterval: 0.3)
        let game = newName("Game")
        try create(game, "Game", ["name": "Carcassonne"])
        let received = try connection.readUntil(timeout: 10) { String(decoding: $0, as: UTF8.self).contains(game) }
        XCTAssertTrue(String(decoding: received, as: UTF8.self).contains(": connected"))
    }

    func testEventStreamClientsThatLeaveAreForgotten() throws {
        let courier = try createCourier()
        let streams = try (0..<3).map { _ in try openEventStream(courier) }
        for stream in streams { XCTAssertTrue(stream.waitForComment("connected", timeout: 5)) }
        XCTAssertEqual(try connectedStreams(), 3)

        streams[0].closeConnection()
        streams[1].closeConnection()
        let deadline = Date().addingTimeInterval(5)
        var connected = try connectedStreams()
        while connected != 1, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            connected = try connectedStreams()
        }
        XCTAssertEqual(connected, 1, "the daemon noticed the two clients leave without writing to them")

        // The one left still gets its event.
        let game = newName("Game")
        try create(game, "Game", ["name": "Root"])
        let event = try XCTUnwrap(streams[2].nextEvent(timeout: 5))
        XCTAssertEqual((try JSONValue.parse(event.data))["ck"]?["qry"]?["rid"], .string(game))
        streams[2].closeConnection()
    }

    /// A client that stops reading its stream is dropped once its connection stops taking writes
    /// (64 KB unsent beyond the sockets' buffers), not buffered for without bound: the daemon
    /// follows each connection's writability from its events.
    func testAnEventStreamClientThatStopsReadingIsDropped() throws {
        try subscribe(querySubscription("notes", type: "Note", firesOn: ["create"], desiredKeys: ["text"]))
        let courier = try createCourier()
        let stalled = try openEventStream(courier)
        XCTAssertTrue(stalled.waitForComment("connected", timeout: 5))
        XCTAssertEqual(try connectedStreams(), 1)
        // Each commit's events carry 2 MB of desired field values; the client reads none of them.
        let text = JSONValue.string(String(repeating: "x", count: 500_000))
        var connected = try connectedStreams()
        for _ in 0..<40 where connected != 0 {
            let notes = (0..<4).map { _ in ("create", record(newName("Note"), "Note", ["text": text])) }
            _ = try modify(notes)
            connected = try connectedStreams()
        }
        let deadline = Date().addingTimeInterval(5)
        while connected != 0, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            connected = try connectedStreams()
        }
        XCTAssertEqual(connected, 0, "the stalled stream was dropped")
        XCTAssertTrue(stalled.waitForServerClose(timeout: 30), "its connection closed after what the sockets held")
    }

    /// A long-poll whose client went away while it was parked (closed, or reset) must not hold
    /// the daemon's shutdown: the framework waits for the close it asked for, which the parked
    /// connection has to complete when the channel goes.
    func testADaemonWithParkedLongPollsOfVanishedClientsStopsAtOnce() throws {
        let courier = try createCourier()
        let cursor = try startCursor(courier)
        for reset in [false, true] {
            let connection = try KeepAliveConnection(port: daemon.port, token: token)
            try connection.send("GET", "\(courier)?since=\(percentEncoded(cursor))&timeout=60")
            Thread.sleep(forTimeInterval: 0.2)
            if reset { connection.resetOnClose() }
            connection.close()
        }
        Thread.sleep(forTimeInterval: 0.3)
        let stopping = Date()
        try daemon.stop()
        XCTAssertLessThan(Date().timeIntervalSince(stopping), 5, "SIGTERM ends the daemon promptly")
    }

    private func connectedStreams() throws -> Int? {
        let text = try daemon.request("GET", "/metrics").text
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("scorebookd_subscribers_connected ") }) else { return nil }
        return Double(line.split(separator: " ").last ?? "").map { Int($0) }
    }
}

/// One keep-alive HTTP/1.1 connection: several requests in turn, each answer read whole (by
/// `Content-Length` or chunked framing), every read bounded by its timeout.
final class KeepAliveConnection {
    private let fd: Int32
    private let port: Int
    private let token: String
    private var pending: [UInt8] = []

    init(port: Int, token: String) throws {
        self.port = port
        self.token = token
        fd = try RawHTTP.connectLoopback(port: port, sendTimeout: 10, receiveTimeout: 1)
    }

    func close() { Glibc.close(fd) }

    /// Makes `close` send a reset instead of a FIN (as a crashed client's kernel may).
    func resetOnClose() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    func send(_ method: String, _ target: String, headers: [(String, String)] = [], body: String = "") throws {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(token)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if method != "GET" { head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        let bytes = Array((head + "\r\n" + body).utf8)
        guard Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw DaemonError("send failed: errno \(errno)") }
    }

    /// Reads until `isDone` holds for everything received so far (or throws at the timeout).
    func readUntil(timeout: TimeInterval, _ isDone: ([UInt8]) -> Bool) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !isDone(pending) {
            guard Date() < deadline else { throw DaemonError("timed out; received: \(String(decoding: pending, as: UTF8.self).prefix(300))") }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count == 0 { throw DaemonError("connection closed; received: \(String(decoding: pending, as: UTF8.self).prefix(300))") }
            if count > 0 { pending += chunk[0..<count] }
        }
        return pending
    }

    /// The next whole response: its status and de-chunked body.
    func readResponse(timeout: TimeInterval) throws -> (status: Int, body: [UInt8]) {
        var parsed: (status: Int, body: [UInt8], length: Int)?
        _ = try readUntil(timeout: timeout) { bytes in
            parsed = KeepAliveConnection.parse(bytes)
            return parsed != nil
        }
        guard let parsed else { throw DaemonError("no response") }
        pending.removeFirst(parsed.length)
        return (parsed.status, parsed.body)
    }

    /// A whole response at the start of `bytes`: status, body, and how many bytes it took.
    private static func parse(_ bytes: [UInt8]) -> (status: Int, body: [UInt8], length: Int)? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headEnd = (0...max(0, bytes.count - 4)).first(where: { bytes.count >= $0 + 4 && Array(bytes[$0..<$0 + 4]) == separator }) else { return nil }
        let head = String(decoding: bytes[0..<headEnd], as: UTF8.self).lowercased()
        let lines = head.split(separator: "\r\n")
        guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        var index = headEnd + 4
        if head.contains("transfer-encoding: chunked") {
            var body: [UInt8] = []
            while true {
                guard let lineEnd = (index..<max(index, bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }),
                      let size = Int(String(decoding: bytes[index..<lineEnd], as: UTF8.self), radix: 16) else { return nil }
                let start = lineEnd + 2
                guard bytes.count >= start + size + 2 else { return nil }
                if size == 0 { return (status, body, start + 2) }
                body += bytes[start..<start + size]
                index = start + size + 2
            }
        }
        let length = lines.first { $0.hasPrefix("content-length:") }.flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) } ?? 0
        guard bytes.count >= index + length else { return nil }
        return (status, Array(bytes[index..<index + length]), index + length)
    }
}
