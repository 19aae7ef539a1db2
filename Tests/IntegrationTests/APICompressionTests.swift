import Foundation
import RecordClient
import RecordModel
import XCTest

/// gzip on the wire against the real `scorebookd`: answers compressed when `Accept-Encoding`
/// allows it and never otherwise, gzip request bodies inflated under the same limits as plain
/// ones (a zip bomb is refused while it streams, in bounded memory), and the CLI's transport
/// sending and reading gzip.
final class APICompressionTests: DaemonTestCase {
    /// A user whose zone holds enough records for a changes page well over a kilobyte.
    func userWithRecords(_ count: Int = 40) throws -> String {
        let token = try makeUser("gzip").token
        try createZone("ScorebookData", token)
        let operations = (0..<count).map { index in
            ("create", record("rec-\(index)", "Item", ["title": ["value": .string("record number \(index) of a compressible feed")],
                                                        "n": ["value": .int(Int64(index))]]))
        }
        try modify(token, operations)
        return token
    }

    func changesRequest(_ token: String, acceptEncoding: String?) throws -> HTTPAnswer {
        var headers = [("Content-Type", "application/json")]
        if let acceptEncoding { headers.append(("Accept-Encoding", acceptEncoding)) }
        let body: JSONValue = ["zoneID": ["zoneName": "ScorebookData"]]
        return try daemon.request("POST", path("records/changes"), token: token, headers: headers, body: Array(body.serializedString().utf8))
    }

    /// A counter of `/metrics` (the sample whose name and labels start the line).
    func metric(_ sample: String) throws -> Int {
        let text = try daemon.request("GET", "/metrics").text
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix(sample + " ") }, "no \(sample) in /metrics")
        return Int(line.split(separator: " ").last ?? "") ?? -1
    }

    func testAGzipAnswerInflatesToTheIdentityAnswerByteForByte() throws {
        let token = try userWithRecords()
        let identity = try changesRequest(token, acceptEncoding: nil)
        XCTAssertEqual(identity.status, 200, identity.text.prefix(300).description)
        XCTAssertNil(identity.headers["content-encoding"], "no Accept-Encoding: identity")
        XCTAssertGreaterThan(identity.body.count, 1024)
        let compressed = try changesRequest(token, acceptEncoding: "gzip")
        XCTAssertEqual(compressed.status, 200)
        XCTAssertEqual(compressed.headers["content-encoding"], "gzip")
        XCTAssertTrue(compressed.headers["vary"]?.lowercased().contains("accept-encoding") == true, "\(compressed.headers)")
        XCTAssertLessThan(compressed.body.count, identity.body.count / 3, "records compress well")
        // The same answer (the order of a JSON object's keys is not fixed from one answer to the next).
        XCTAssertEqual(try JSONValue.parse(try Gzip.decompress(compressed.body, limit: 1 << 24)), try JSONValue.parse(identity.body))

        // A fixed file comes back byte for byte.
        let script = try daemon.request("GET", "/console/console.js")
        let zippedScript = try daemon.request("GET", "/console/console.js", headers: [("Accept-Encoding", "gzip, deflate")])
        XCTAssertNil(script.headers["content-encoding"])
        XCTAssertEqual(zippedScript.headers["content-encoding"], "gzip")
        XCTAssertGreaterThan(script.body.count, 1024)
        XCTAssertTrue(try Gzip.decompress(zippedScript.body, limit: 1 << 24) == script.body,
                      "\(zippedScript.body.count) bytes inflate to the \(script.body.count) bytes of the identity answer")
    }

    func testAcceptEncodingQValuesDecide() throws {
        let token = try userWithRecords()
        let cases: [(String?, Bool)] = [
            (nil, false), ("identity", false), ("gzip;q=0", false), ("gzip; q=0.0, identity", false), ("br, deflate", false),
            ("*;q=0", false), ("gzip", true), ("GZIP", true), ("br, gzip;q=0.5", true), ("*", true), ("deflate, *;q=0.1", true),
            ("x-gzip", true), ("gzip;q=0, *", false),
        ]
        for (header, compressed) in cases {
            let answer = try changesRequest(token, acceptEncoding: header)
            XCTAssertEqual(answer.status, 200, "\(header ?? "absent")")
            XCTAssertEqual(answer.headers["content-encoding"], compressed ? "gzip" : nil, "Accept-Encoding: \(header ?? "absent")")
        }
    }

    func testSmallAnswersAndErrorsAreNotCompressed() throws {
        let token = try makeUser("small").token
        let small = try daemon.request("GET", path("users/current"), token: token, headers: [("Accept-Encoding", "gzip")])
        XCTAssertEqual(small.status, 200)
        XCTAssertLessThan(small.body.count, 1024)
        XCTAssertNil(small.headers["content-encoding"], "an answer under 1 KB goes as it is")
        XCTAssertEqual(try small.parsed().body["userRecordName"]?.stringValue?.isEmpty, false)
        let error = try daemon.request("POST", path("records/lookup"), token: "wrong", headers: [("Accept-Encoding", "gzip")], body: Array("{}".utf8))
        XCTAssertNil(error.headers["content-encoding"])
        assertError(try error.parsed(), 401, "AUTHENTICATION_FAILED")
    }

    func testAGzipBodyOnRecordsModifyIsInflated() throws {
        let token = try makeUser("body").token
        try createZone("ScorebookData", token)
        let before = try metric("scorebookd_gzip_requests_total")
        let body = modifyBody([("create", record("zipped", "Item", ["title": ["value": "sent gzip-compressed"]]))])
        let answer = try daemon.request("POST", path("records/modify"), token: token,
                                        headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
                                        body: try Gzip.compress(Array(body.serializedString().utf8))).parsed()
        XCTAssertEqual(answer.status, 200, answer.body.serializedString())
        XCTAssertEqual(answer.body["records"]?.arrayValue?.first?["recordName"]?.stringValue, "zipped", answer.body.serializedString())
        XCTAssertEqual(try lookup(token, "zipped")?["fields"]?["title"]?["value"]?.stringValue, "sent gzip-compressed")
        XCTAssertEqual(try metric("scorebookd_gzip_requests_total"), before + 1)
        // Other JSON operations take gzip bodies too.
        let lookupBody: JSONValue = ["zoneID": ["zoneName": "ScorebookData"], "records": [["recordName": "zipped"]]]
        let looked = try daemon.request("POST", path("records/lookup"), token: token, headers: [("Content-Encoding", "gzip")],
                                        body: try Gzip.compress(Array(lookupBody.serializedString().utf8))).parsed()
        XCTAssertEqual(looked.body["records"]?.arrayValue?.first?["recordChangeTag"]?.stringValue?.isEmpty, false, looked.body.serializedString())
    }

    func testCorruptTruncatedAndUnknownCodingsAreRefused() throws {
        let token = try makeUser("bad").token
        try createZone("ScorebookData", token)
        let json = Array(modifyBody([("create", record("never", "Item"))]).serializedString().utf8)
        let compressed = try Gzip.compress(json)
        var flipped = compressed
        flipped[flipped.count / 2] ^= 0xFF
        let bodies: [(String, [UInt8])] = [
            ("not gzip at all", json), ("a flipped byte", flipped), ("cut short", Array(compressed.prefix(compressed.count - 6))),
            ("gzip followed by garbage", compressed + Array("garbage".utf8)),
        ]
        for (label, bytes) in bodies {
            let answer = try daemon.request("POST", path("records/modify"), token: token, headers: [("Content-Encoding", "gzip")], body: bytes)
            assertError(try answer.parsed(), 400, "BAD_REQUEST", label)
        }
        let brotli = try daemon.request("POST", path("records/modify"), token: token, headers: [("Content-Encoding", "br")], body: json)
        XCTAssertEqual(brotli.status, 415)
        XCTAssertEqual(try brotli.parsed().body["serverErrorCode"]?.stringValue, "BAD_REQUEST")
        XCTAssertTrue(brotli.text.contains("gzip"), "the refusal says what to send: \(brotli.text)")
        XCTAssertEqual(brotli.headers["accept-encoding"], "gzip, identity")
        XCTAssertNil(try lookup(token, "never"), "nothing of a refused body is written")
        // Two gzip members in a row are one body (RFC 1952), and identity is no coding at all.
        let half = json.count / 2
        let twoMembers = try Gzip.compress(Array(json[..<half])) + Gzip.compress(Array(json[half...]))
        let answer = try daemon.request("POST", path("records/modify"), token: token, headers: [("Content-Encoding", "gzip")], body: twoMembers)
        XCTAssertEqual(answer.status, 200, answer.text)
        let identity = try daemon.request("POST", path("records/lookup"), token: token, headers: [("Content-Encoding", "identity")],
                                          body: Array(#"{"zoneID":{"zoneName":"ScorebookData"},"records":[{"recordName":"never"}]}"#.utf8))
        XCTAssertEqual(identity.status, 200, identity.text)
        try assertHealthy()
    }

    /// 2 GB of zeros, compressed (about 2 MB) as it is sent: refused once it inflates past the
    /// 32 MB body limit, without the daemon's memory growing by anything like the bomb's size.
    func testAGzipBombIsRefusedWith413InBoundedMemory() throws {
        let token = try makeUser("bomb").token
        let pid = try daemon.pid
        try ProcessStat.resetPeakMemory(of: pid)
        let before = try ProcessStat.memory(of: pid)
        let (answer, sent) = try sendGzipBomb(path: path("records/modify"), token: token, inflatedBytes: 2 << 30)
        let after = try ProcessStat.memory(of: pid)
        print("gzip bomb: answered after \(sent) compressed bytes; daemon resident \(before.resident) MB before, peak \(after.peak) MB")
        let reply = try XCTUnwrap(answer, "no answer after \(sent) compressed bytes")
        assertError(try reply.parsed(), 413, "LIMIT_EXCEEDED")
        XCTAssertLessThan(sent, 2 << 20, "refused while it streams, long before its end")
        XCTAssertLessThan(after.peak - before.resident, 160, "the body is never inflated whole (2 GB)")
        try assertHealthy()
    }

    /// The CLI's transport: a large batch goes out compressed, answers come back compressed, and
    /// both arrive as the caller's plain bytes.
    func testTheCLITransportSendsAndReadsGzip() async throws {
        let token = try makeUser("cli").token
        try createZone("ScorebookData", token)
        let operations = (0..<300).map { index in
            ("create", record("cli-\(index)", "Item", ["title": ["value": .string(String(repeating: "a batch large enough to go compressed ", count: 8) + "\(index)")]]))
        }
        let batch = Array(modifyBody(operations).serializedString().utf8)
        XCTAssertGreaterThan(batch.count, SocketTransport.compressedBatchBytes)
        let (requestsBefore, wireBefore, inflatedBefore) = (try metric("scorebookd_gzip_requests_total"),
                                                            try metric("scorebookd_gzip_request_bytes_total{form=\"wire\"}"),
                                                            try metric("scorebookd_gzip_request_bytes_total{form=\"inflated\"}"))
        let answersBefore = try metric("scorebookd_gzip_answers_total")
        let transport = SocketTransport()
        let base = "http://127.0.0.1:\(try daemon.port)"
        let modified = try await transport.send(HTTPRequest(method: "POST", url: URL(string: base + path("records/modify"))!,
                                                            headers: ["Authorization": "Bearer \(token)"], body: batch))
        XCTAssertEqual(modified.status, 200, String(decoding: modified.body.prefix(300), as: UTF8.self))
        XCTAssertEqual(try JSONValue.parse(modified.body)["records"]?.arrayValue?.count, 300, "the answer arrives inflated")
        XCTAssertEqual(try metric("scorebookd_gzip_requests_total"), requestsBefore + 1, "the batch went compressed")
        let wire = try metric("scorebookd_gzip_request_bytes_total{form=\"wire\"}") - wireBefore
        XCTAssertEqual(try metric("scorebookd_gzip_request_bytes_total{form=\"inflated\"}") - inflatedBefore, batch.count)
        XCTAssertLessThan(wire, batch.count / 4, "\(wire) bytes on the wire for \(batch.count)")
        XCTAssertGreaterThan(try metric("scorebookd_gzip_answers_total"), answersBefore, "the modify answer came compressed")

        let changesBody: JSONValue = ["zoneID": ["zoneName": "ScorebookData"]]
        let changes = try await transport.send(HTTPRequest(method: "POST", url: URL(string: base + path("records/changes"))!,
                                                           headers: ["Authorization": "Bearer \(token)"],
                                                           body: Array(changesBody.serializedString().utf8)))
        let identity = try changesRequest(token, acceptEncoding: nil)
        XCTAssertEqual(try JSONValue.parse(changes.body), try JSONValue.parse(identity.body), "the transport hands on the inflated answer")

        // A small batch goes as it is.
        let requestsNow = try metric("scorebookd_gzip_requests_total")
        let small = try await transport.send(HTTPRequest(method: "POST", url: URL(string: base + path("records/modify"))!,
                                                         headers: ["Authorization": "Bearer \(token)"],
                                                         body: Array(modifyBody([("create", record("one", "Item"))]).serializedString().utf8)))
        XCTAssertEqual(small.status, 200)
        XCTAssertEqual(try metric("scorebookd_gzip_requests_total"), requestsNow)
    }
}

extension DaemonTestCase {
    /// Sends `inflatedBytes` of zeros as a chunked gzip body, compressed a megabyte at a time as
    /// it goes, until the daemon answers; returns the answer and the compressed bytes sent.
    func sendGzipBomb(path: String, token: String?, inflatedBytes: Int) throws -> (HTTPAnswer?, Int) {
        let connection = try LoopbackConnection(port: try daemon.port)
        var head = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        XCTAssertTrue(connection.write(head + "\r\n"))
        let deflater = try GzipDeflater(level: 9)
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        var sent = 0
        for index in 0..<(inflatedBytes >> 20) {
            if connection.isReadable(timeout: 0) { break }  // answered early
            let piece = try deflater.deflate(zeros, finish: index == (inflatedBytes >> 20) - 1)
            guard !piece.isEmpty else { continue }
            guard connection.write(Array(String(piece.count, radix: 16).utf8) + [13, 10] + piece + [13, 10]) else { break }
            sent += piece.count
        }
        _ = connection.write("0\r\n\r\n")
        return (try connection.readAnswer(timeout: 30), sent)
    }
}
