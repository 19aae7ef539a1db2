import Foundation
#if canImport(Glibc)
import Glibc
#endif
import RecordClient
import Synchronization
import XCTest

/// The CLI's HTTP transport against a scripted server on loopback: keep-alive reuse, a kept
/// connection the server closed meanwhile, chunked and length-less answers, refusal, timeouts,
/// and HTTPS through the dlopen'ed libcurl.
final class SocketTransportTests: XCTestCase {
    func testKeptAliveConnectionsAreReusedAndAClosedOneIsReplaced() async throws {
        let server = try ScriptedServer { request, connectionIndex, requestIndex in
            let body = "{\"connection\":\(connectionIndex),\"request\":\(requestIndex),\"bytes\":\(request.count)}"
            // The first connection closes after its second answer, as an idle timeout would.
            let close = connectionIndex == 0 && requestIndex == 1
            return "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\(close ? "Connection: close\r\n" : "")\r\n\(body)"
        }
        defer { server.stop() }
        let transport = SocketTransport()
        var answers: [String] = []
        for index in 0..<4 {
            let request = HTTPRequest(method: "POST", url: server.url("/database/1/x/records/modify?a=b%20c"), headers: ["X-Test": "\(index)"],
                                      body: Array("{\"n\":\(index)}".utf8), timeout: 5)
            let response = try await transport.send(request)
            XCTAssertEqual(response.status, 200)
            answers.append(String(decoding: response.body, as: UTF8.self))
        }
        XCTAssertEqual(answers[0].prefix(27), "{\"connection\":0,\"request\":0")
        XCTAssertEqual(answers[1].prefix(27), "{\"connection\":0,\"request\":1")
        XCTAssertEqual(answers[2].prefix(27), "{\"connection\":1,\"request\":0", "a closed connection is replaced")
        XCTAssertEqual(answers[3].prefix(27), "{\"connection\":1,\"request\":1", "and the new one is kept")
        let head = server.requests.first ?? ""
        XCTAssertTrue(head.hasPrefix("POST /database/1/x/records/modify?a=b%20c HTTP/1.1\r\n"), head)
        XCTAssertTrue(head.contains("Content-Length: 7\r\n") && head.hasSuffix("{\"n\":0}"), head)
        XCTAssertTrue(head.contains("X-Test: 0\r\n"), head)
    }

    func testAKeptConnectionTheServerDroppedSilentlyIsRetriedOnce() async throws {
        // The server answers the first request, then drops every connection without answering
        // its second request: only a fresh connection's first request is ever answered.
        let server = try ScriptedServer { _, _, requestIndex in
            requestIndex == 0 ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}" : nil
        }
        defer { server.stop() }
        let transport = SocketTransport()
        for _ in 0..<3 {
            let response = try await transport.send(HTTPRequest(method: "GET", url: server.url("/health"), timeout: 5))
            XCTAssertEqual(response.status, 200)
        }
        XCTAssertEqual(server.connectionCount, 3)
    }

    func testChunkedAndLengthlessAnswersAreRead() async throws {
        let server = try ScriptedServer { _, connectionIndex, _ in
            if connectionIndex == 0 {
                return "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3;x=y\r\n12}\r\n0\r\nTrailer: 1\r\n\r\n"
            }
            return "HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n{\"serverErrorCode\":\"NOT_FOUND\"}"
        }
        defer { server.stop() }
        let transport = SocketTransport()
        let chunked = try await transport.send(HTTPRequest(method: "GET", url: server.url("/a"), timeout: 5))
        XCTAssertEqual(chunked.status, 201)
        XCTAssertEqual(String(decoding: chunked.body, as: UTF8.self), "{\"a\":12}")
        server.dropConnections()
        let lengthless = try await transport.send(HTTPRequest(method: "GET", url: server.url("/b"), timeout: 5))
        XCTAssertEqual(lengthless.status, 404)
        XCTAssertEqual(String(decoding: lengthless.body, as: UTF8.self), "{\"serverErrorCode\":\"NOT_FOUND\"}")
    }

    func testARefusedConnectionAndASilentServerAreUnreachableErrors() async throws {
        let port = try ScriptedServer.unusedPort()
        let transport = SocketTransport()
        do {
            _ = try await transport.send(HTTPRequest(method: "GET", url: URL(string: "http://127.0.0.1:\(port)/health")!, timeout: 5))
            XCTFail("a closed port answered")
        } catch RecordClientError.unreachable(let message) {
            XCTAssertEqual(message, "cannot reach the server at 127.0.0.1:\(port)")
        }

        let silent = try ScriptedServer(silent: true) { _, _, _ in nil }  // reads the request, never answers
        defer { silent.stop() }
        let started = Date()
        do {
            _ = try await transport.send(HTTPRequest(method: "GET", url: silent.url("/health"), timeout: 0.3))
            XCTFail("a silent server answered")
        } catch RecordClientError.unreachable(let message) {
            XCTAssertEqual(message, "the server at 127.0.0.1:\(silent.port) did not answer in time")
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }

    func testHTTPSGoesThroughLibcurl() async throws {
        // Nothing listens: libcurl is loaded and reports the refusal in its own words.
        let port = try ScriptedServer.unusedPort()
        do {
            _ = try await SocketTransport().send(HTTPRequest(method: "GET", url: URL(string: "https://127.0.0.1:\(port)/health")!, timeout: 5))
            XCTFail("a closed port answered")
        } catch RecordClientError.unreachable(let message) {
            XCTAssertTrue(message.hasPrefix("cannot reach the server at 127.0.0.1:\(port): "), message)
            XCTAssertFalse(message.contains("cannot be loaded"), message)
        }
    }
}

/// A loopback HTTP server that answers each request with what `script` returns (nil: close
/// the connection without answering). Requests must carry a Content-Length or no body.
final class ScriptedServer: Sendable {
    private struct Connections {
        var stopped = false
        var open: [Int32] = []
        var requests: [String] = []
        var count = 0
    }

    let port: Int
    private let listener: Int32
    private let connections = Mutex(Connections())
    var requests: [String] { connections.withLock { $0.requests } }
    var connectionCount: Int { connections.withLock { $0.count } }
    /// Set before the accept thread starts, so it never races with a connection.
    let silent: Bool
    private let script: @Sendable (_ request: [UInt8], _ connection: Int, _ request: Int) -> String?

    init(silent: Bool = false, script: @escaping @Sendable (_ request: [UInt8], _ connection: Int, _ request: Int) -> String?) throws {
        self.silent = silent
        self.script = script
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        listen(descriptor, 16)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    static func unusedPort() throws -> Int {
        let server = try ScriptedServer { _, _, _ in nil }
        server.stop()
        return server.port
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    func stop() {
        connections.withLock { $0.stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        dropConnections()
    }

    func dropConnections() {
        let open = connections.withLock { $0.open }
        for connection in open { shutdown(connection, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0, !connections.withLock({ $0.stopped }) else {
                if connection >= 0 { close(connection) }
                return
            }
            let index = connections.withLock {
                $0.open.append(connection)
                $0.count += 1
                return $0.count - 1
            }
            Thread { [self] in serve(connection, index) }.start()
        }
    }

    private func serve(_ connection: Int32, _ connectionIndex: Int) {
        defer {
            connections.withLock { $0.open.removeAll { $0 == connection } }
            close(connection)
        }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var requestIndex = 0
        for _ in 0..<100 {
            // One request: the head, then Content-Length bytes.
            var request: [UInt8]?
            while request == nil {
                if let end = Self.headEnd(buffer) {
                    let head = String(decoding: buffer[..<end], as: UTF8.self).lowercased()
                    let length = head.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) } ?? 0
                    if buffer.count >= end + 4 + length {
                        request = Array(buffer[..<(end + 4 + length)])
                        buffer.removeFirst(end + 4 + length)
                        break
                    }
                }
                let count = recv(connection, &chunk, chunk.count, 0)
                guard count > 0 else { return }
                buffer.append(contentsOf: chunk[..<count])
            }
            guard let request else { return }
            connections.withLock { $0.requests.append(String(decoding: request, as: UTF8.self)) }
            if silent {
                while recv(connection, &chunk, chunk.count, 0) > 0 {}  // until the client gives up
                return
            }
            guard let answer = script(request, connectionIndex, requestIndex) else { return }
            requestIndex += 1
            let bytes = Array(answer.utf8)
            _ = bytes.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if answer.lowercased().contains("connection: close") { return }
        }
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
