import Foundation
import RecordModel
import Synchronization
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP shapes real clients produce, beyond one small request per connection: URLSession
/// (libcurl on Linux: `Expect: 100-continue` on larger bodies, keep-alive), chunked bodies, and
/// several requests on one connection.
final class APITransportTests: DaemonTestCase {
    func testURLSessionPostsALargeBatchAndReadsItBack() throws {
        let (_, token) = try makeUser()
        let operations: [JSONValue] = (0..<300).map { index in
            ["operationType": "create", "record": [
                "recordName": .string("Score|~|\(index)"), "recordType": "Score",
                "fields": ["notes": ["value": .string(String(repeating: "n", count: 500))], "value": ["value": .double(Double(index))]],
            ]]
        }
        let body = JSONValue.object(["operations": .array(operations)]).serialized()
        XCTAssertGreaterThan(body.count, 150_000)
        let started = Date()
        let saved = try urlSessionPost(path("records/modify"), token: token, body: body)
        XCTAssertEqual(saved.status, 200, saved.body.serializedString().prefix(300).description)
        XCTAssertEqual(saved.body["records"]?.arrayValue?.filter { $0["recordChangeTag"] != nil }.count, 300)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)

        let changes = try urlSessionPost(path("records/changes"), token: token, body: Array("{}".utf8))
        XCTAssertEqual(changes.status, 200)
        XCTAssertEqual(changes.body["records"]?.arrayValue?.count, 300)
    }

    func testAChunkedRequestBodyIsRead() throws {
        let (_, token) = try makeUser()
        let json = Array(#"{"operations":[{"operationType":"create","record":{"recordName":"chunked","recordType":"Thing"}}]}"#.utf8)
        var request = Array("POST \(path("records/modify")) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".utf8)
        for chunk in stride(from: 0, to: json.count, by: 10) {
            let piece = json[chunk..<min(chunk + 10, json.count)]
            request += Array(String(piece.count, radix: 16).utf8) + [13, 10] + piece + [13, 10]
        }
        request += Array("0\r\n\r\n".utf8)
        let answer = try RawHTTP.parse(try RawHTTP.sendBytes(port: daemon.port, request, timeout: 10)).parsed()
        XCTAssertEqual(answer.status, 200, answer.body.serializedString())
        XCTAssertNotNil(try lookup(token, "chunked", zone: ZoneID.defaultZoneName))
    }

    func testSeveralRequestsOnOneKeptAliveConnection() throws {
        let (recordName, token) = try makeUser()
        let one = "GET \(path("users/current")) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n"
        let last = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        let received = String(decoding: try RawHTTP.sendBytes(port: daemon.port, Array((one + one + last).utf8), timeout: 10), as: UTF8.self)
        XCTAssertEqual(received.components(separatedBy: "HTTP/1.1 200").count - 1, 3, "three answers: \(received.prefix(600))")
        XCTAssertEqual(received.components(separatedBy: recordName).count - 1, 2)
        XCTAssertTrue(received.contains(#"{"status":"ok"}"#))
    }

    /// One POST through URLSession, waited for with a deadline.
    func urlSessionPost(_ path: String, token: String, body: [UInt8]) throws -> (status: Int, body: JSONValue) {
        var request = URLRequest(url: try daemon.baseURL.appendingPathComponent(path), timeoutInterval: 20)
        request.httpMethod = "POST"
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body)
        let done = DispatchSemaphore(value: 0)
        let outcome = URLSessionOutcome()
        let task = URLSession.shared.dataTask(with: request) { data, response, error in
            outcome.set(data, (response as? HTTPURLResponse)?.statusCode, error)
            done.signal()
        }
        task.resume()
        guard done.wait(timeout: .now() + 30) == .success else {
            task.cancel()
            throw DaemonError("URLSession request to \(path) did not finish in 30 s")
        }
        let (data, status, error) = outcome.get()
        if let error { throw error }
        return (status ?? 0, try JSONValue.parse([UInt8](data ?? Data())))
    }
}

/// A URLSession completion handed across threads.
final class URLSessionOutcome: Sendable {
    private let value = Mutex<(Data?, Int?, (any Error)?)>((nil, nil, nil))

    func set(_ data: Data?, _ status: Int?, _ error: (any Error)?) { value.withLock { $0 = (data, status, error) } }

    func get() -> (Data?, Int?, (any Error)?) { value.withLock { $0 } }
}
