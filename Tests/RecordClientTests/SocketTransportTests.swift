import Foundation
#if canImport(Glibc)
import Glibc
#endif
import RecordClient
import TestSupport
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
