import Foundation
import RecordClient
import RecordModel
import TestSupport
import XCTest

/// Uploads sent gzip-compressed are stored inflated, under the asset size limit on their inflated
/// bytes; downloads are never compressed (pictures are compressed already). On SQLite and,
/// through `PostgresAPIAssetTests`, PostgreSQL.
extension APIAssetTests {
    func testAGzipUploadIsStoredInflatedAndDownloadedAsItIs() throws {
        let alice = try makeUser("alice").token
        try createZone(zone, alice)
        // Half random, half repetitive: a file that compresses, whose bytes must come back exactly.
        let bytes = randomBytes(100_000, seed: 41) + Array(String(repeating: "scorebook ", count: 20_000).utf8)
        let compressed = try Gzip.compress(bytes)
        XCTAssertLessThan(compressed.count, bytes.count)
        let name = uniqueName("Person")
        let url = try uploadURL(alice, record: name)
        let answer = try daemon.request("POST", try pathOf(url), headers: [("Content-Type", "application/octet-stream"), ("Content-Encoding", "gzip")],
                                        body: compressed).parsed()
        XCTAssertEqual(answer.status, 200, answer.body.serializedString())
        let singleFile = try XCTUnwrap(answer.body["singleFile"])
        XCTAssertEqual(singleFile["size"]?.int64Value, Int64(bytes.count), "the inflated size")
        XCTAssertEqual(singleFile["fileChecksum"]?.stringValue, Data(SHA256Hasher.digest(bytes)).base64EncodedString())
        let saved = try XCTUnwrap(modify(alice, [("create", person(name, avatar: singleFile))], zone: zone).first)
        let downloadURL = try XCTUnwrap(saved["fields"]?["avatar"]?["value"]?["downloadURL"]?.stringValue, saved.serializedString())
        let downloaded = try download(downloadURL, headers: [("Accept-Encoding", "gzip")])
        XCTAssertEqual(downloaded.status, 200)
        XCTAssertNil(downloaded.headers["content-encoding"], "asset downloads go as they are")
        XCTAssertEqual(downloaded.body, bytes)

        let corrupt = try daemon.request("POST", try pathOf(try uploadURL(alice, record: uniqueName("Person"))),
                                         headers: [("Content-Encoding", "gzip")], body: Array(compressed.dropLast(100)))
        XCTAssertEqual(corrupt.status, 400, corrupt.text)
        XCTAssertEqual(try corrupt.parsed().body["serverErrorCode"]?.stringValue, "BAD_REQUEST")
    }

    func testAGzipUploadThatInflatesPastTheAssetLimitIsRefusedWith413() throws {
        let alice = try makeUser("alice").token
        try createZone(zone, alice)
        let url = try uploadURL(alice, record: uniqueName("Person"))
        try ProcessStat.resetPeakMemory(of: try daemon.pid)
        let before = try ProcessStat.memory(of: try daemon.pid)
        // 1 GB of zeros, about a megabyte compressed, against the 50 MB asset limit.
        let (answer, sent) = try sendGzipBomb(path: try pathOf(url), token: nil, inflatedBytes: 1 << 30)
        let after = try ProcessStat.memory(of: try daemon.pid)
        print("gzip bomb upload: answered after \(sent) compressed bytes; resident \(before.resident) MB before, peak \(after.peak) MB")
        let reply = try XCTUnwrap(answer, "no answer after \(sent) compressed bytes")
        XCTAssertEqual(reply.status, 413, reply.text)
        XCTAssertEqual(try reply.parsed().body["serverErrorCode"]?.stringValue, "LIMIT_EXCEEDED")
        XCTAssertLessThan(sent, 1 << 20, "refused while it streams")
        XCTAssertLessThan(after.peak - before.resident, 60, "an upload is inflated a window at a time")
    }
}
