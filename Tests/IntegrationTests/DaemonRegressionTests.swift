import Foundation
import RecordModel
import XCTest

/// Daemon bugs found by the integration suite, since fixed: each doc comment gives the request,
/// what the contract expects and what the daemon used to do.
final class DaemonRegressionTests: DaemonTestCase {
    /// Requests the HTTP parser itself refuses, before they reach the API.
    ///
    /// Requests: (1) `GET …/private/zones/list` with an `Authorization: Bearer` header of 100,000
    /// characters; (2) a request line with a 100,000-character path; (3) 3,000 header fields;
    /// (4) `Content-Length: abc`; (5) a raw non-ASCII byte (UTF-8 `ç`) in the path, as a client
    /// that does not percent-encode a container name sends it.
    /// Expected: a JSON error dictionary ("No input, however malformed, makes the
    /// daemon … answer with anything but JSON"), e.g. 400 `BAD_REQUEST` or 413 `LIMIT_EXCEEDED`.
    /// Actual: for (3), (4) and (5), `400 Bad Request`, `Content-Length: 0`, no body,
    /// `Connection: close` — written by the HTTP decoder before the API sees the request, so no
    /// `serverErrorCode`. (1) and (2) answered the same way until the header limits were raised to
    /// 256 KB; they stay here so they stay fixed. The daemon keeps serving throughout.
    func testRequestsTheHTTPParserRefusesGetAJSONError() throws {
        let target = path("zones/list")
        let requests: [(String, [UInt8])] = [
            ("a 100 KB Authorization header",
             Array("GET \(target) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(String(repeating: "a", count: 100_000))\r\nConnection: close\r\n\r\n".utf8)),
            ("a 100 KB path", Array("GET /database/1/\(String(repeating: "a", count: 100_000))/development/private/zones/list HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)),
            ("3000 header fields", Array(("GET /health HTTP/1.1\r\nHost: x\r\n" + (0..<3000).map { "X-H\($0): v\r\n" }.joined() + "Connection: close\r\n\r\n").utf8)),
            ("Content-Length: abc", Array("POST \(target) HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\nConnection: close\r\n\r\n".utf8)),
            ("a raw UTF-8 byte in the path", Array("GET /database/1/\u{E7}/development/private/zones/list HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)),
        ]
        for (what, request) in requests {
            let answer = try RawHTTP.parse(try RawHTTP.sendBytes(port: daemon.port, request, timeout: 10))
            XCTAssertTrue((400..<500).contains(answer.status), "\(what): status \(answer.status)")
            let json = try? JSONValue.parse(answer.body)
            XCTAssertNotNil(json?["serverErrorCode"]?.stringValue, "\(what): the answer is a JSON error dictionary, got \(answer.text.debugDescription)")
        }
        try assertHealthy()
    }

    /// The authentication scheme's case.
    ///
    /// Request: `GET …/private/users/current` with `Authorization: bearer TOKEN` (or `BEARER TOKEN`)
    /// and a valid token.
    /// Expected: 200 with the user, as for `Bearer TOKEN` — an HTTP authentication scheme is a
    /// case-insensitive token (RFC 9110, section 11.1), and some HTTP clients and proxies send it lower-case.
    /// Actual: 401 `AUTHENTICATION_FAILED` "Authorization must be 'Bearer TOKEN'"
    /// (`RecordAPI.authenticate` compares the prefix `"Bearer "` exactly).
    func testTheBearerSchemeIsCaseInsensitive() throws {
        let (recordName, token) = try makeUser("scheme")
        for scheme in ["bearer", "BEARER", "bEaReR"] {
            let answer = try daemon.request("GET", path("users/current"), headers: [("Authorization", "\(scheme) \(token)")]).parsed()
            XCTAssertEqual(answer.status, 200, "\(scheme): \(answer.body.serializedString())")
            XCTAssertEqual(answer.body["userRecordName"]?.stringValue, recordName, scheme)
        }
    }
}
