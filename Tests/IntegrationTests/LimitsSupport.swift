import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// One loopback TCP connection the test drives byte by byte: keep it open, send half a request,
/// stream a body, see when the server closes it. Every wait is bounded.
final class LoopbackConnection {
    let fd: Int32
    private(set) var closed = false

    init(port: Int, timeout: TimeInterval = 5) throws {
        fd = try RawHTTP.connectLoopback(port: port, sendTimeout: timeout)
    }

    deinit { close() }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    /// Writes every byte; false when the connection refuses them (closed or reset).
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    func write(_ text: String) -> Bool { write(Array(text.utf8)) }

    /// Whether the server sent something (or closed) within `timeout`.
    func isReadable(timeout: TimeInterval) -> Bool {
        var pollFD = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pollFD, 1, Int32(max(0, timeout * 1000)))
        return ready > 0
    }

    enum ReadResult: Equatable {
        case data([UInt8])
        /// The server closed the connection (EOF or reset).
        case closed
        case timedOut
    }

    /// One read, waiting at most `timeout`.
    func read(timeout: TimeInterval) -> ReadResult {
        guard isReadable(timeout: timeout) else { return .timedOut }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { return .data(Array(buffer[0..<count])) }
            if count < 0 && errno == EINTR { continue }
            return .closed
        }
    }

    /// Reads one whole HTTP answer (head, then `Content-Length` bytes or chunks), or nil if the
    /// server closed the connection or went quiet first.
    func readAnswer(timeout: TimeInterval) throws -> HTTPAnswer? {
        let deadline = Date().addingTimeInterval(timeout)
        var received: [UInt8] = []
        while Date() < deadline {
            if let answer = try Self.completeAnswer(received) { return answer }
            switch read(timeout: deadline.timeIntervalSinceNow) {
            case .data(let bytes): received += bytes
            case .closed: return try received.isEmpty ? nil : RawHTTP.parse(received)
            case .timedOut: return nil
            }
        }
        return try Self.completeAnswer(received)
    }

    static func completeAnswer(_ bytes: [UInt8]) throws -> HTTPAnswer? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4, let headEnd = (0...(bytes.count - 4)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else {
            return nil
        }
        let head = String(decoding: bytes[0..<headEnd], as: UTF8.self).lowercased()
        let bodyCount = bytes.count - headEnd - 4
        if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
           let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
        {
            return bodyCount >= length ? try RawHTTP.parse(bytes) : nil
        }
        if head.contains("transfer-encoding: chunked") {
            let tail: [UInt8] = Array("0\r\n\r\n".utf8)
            return bytes.count >= tail.count && Array(bytes.suffix(tail.count)) == tail ? try RawHTTP.parse(bytes) : nil
        }
        return nil
    }

    /// Waits until the server closes the connection, discarding anything it sends; the seconds
    /// it took, or nil if it was still open at the timeout.
    func waitForClose(timeout: TimeInterval) -> TimeInterval? {
        let started = Date()
        let deadline = started.addingTimeInterval(timeout)
        while Date() < deadline {
            switch read(timeout: min(1, deadline.timeIntervalSinceNow)) {
            case .closed: return Date().timeIntervalSince(started)
            case .data, .timedOut: continue
            }
        }
        return nil
    }

    /// A keep-alive GET on this connection and its answer.
    func get(_ path: String, port: Int, token: String? = nil, timeout: TimeInterval = 10) throws -> HTTPAnswer? {
        var head = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        head += "\r\n"
        guard write(head) else { return nil }
        return try readAnswer(timeout: timeout)
    }
}

extension DaemonProcess {
    /// Fails the test unless `/health` answers `200 {"status":"ok"}` on a fresh connection.
    func assertAnswersHealth(_ message: String, file: StaticString = #filePath, line: UInt = #line) {
        do {
            let answer = try get("/health", token: nil)
            XCTAssertEqual(answer.status, 200, message, file: file, line: line)
            XCTAssertEqual(answer.body["status"]?.stringValue, "ok", message, file: file, line: line)
        } catch {
            XCTFail("\(message): /health failed: \(error)", file: file, line: line)
        }
        XCTAssertTrue(isRunning, "\(message): the daemon is still running", file: file, line: line)
    }
}
