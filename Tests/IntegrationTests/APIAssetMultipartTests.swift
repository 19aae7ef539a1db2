import Foundation
import RecordModel
import TestSupport
import XCTest

/// Uploads as `multipart/form-data` (OpenCloudKit, a browser's `FormData`): the file part's bytes
/// are stored exactly, the envelope never; a 50 MB one passes through a bounded amount of the
/// daemon's memory; other content types are refused. On SQLite and, through
/// `PostgresAPIAssetTests`, PostgreSQL.
extension APIAssetTests {
    func multipartBody(_ bytes: [UInt8], boundary: String, name: String = "file", filename: String = "picture.jpg") -> [UInt8] {
        let head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\n"
            + "Content-Type: application/octet-stream\r\n\r\n"
        return Array(head.utf8) + bytes + Array("\r\n--\(boundary)--\r\n".utf8)
    }

    func postMultipart(_ url: String, _ body: [UInt8], boundary: String, quoted: Bool = false) throws -> (status: Int, body: JSONValue) {
        let type = "multipart/form-data; boundary=\(quoted ? "\"\(boundary)\"" : boundary)"
        return try daemon.request("POST", try pathOf(url), headers: [("Content-Type", type)], body: body, timeout: 120).parsed()
    }

    func testMultipartUploadsStoreTheFilePartByteForByte() throws {
        let alice = try makeUser("alice").token
        try createZone(zone, alice)
        // OpenCloudKit's 3,000-byte upload, which came back as 3,202 bytes of envelope.
        let bytes = randomBytes(3000, seed: 31) + Array("\r\n--not-the-boundary\r\n".utf8)
        let name = uniqueName("Person")
        let answer = try postMultipart(try uploadURL(alice, record: name), multipartBody(bytes, boundary: "----OpenCloudKitBoundary7"),
                                       boundary: "----OpenCloudKitBoundary7", quoted: true)
        XCTAssertEqual(answer.status, 200, answer.body.serializedString())
        let singleFile = try XCTUnwrap(answer.body["singleFile"])
        XCTAssertEqual(singleFile["size"]?.int64Value, Int64(bytes.count))
        XCTAssertEqual(singleFile["fileChecksum"]?.stringValue, Data(SHA256Hasher.digest(bytes)).base64EncodedString())
        let saved = try XCTUnwrap(modify(alice, [("create", person(name, avatar: singleFile))], zone: zone).first)
        let downloadURL = try XCTUnwrap(saved["fields"]?["avatar"]?["value"]?["downloadURL"]?.stringValue, saved.serializedString())
        XCTAssertEqual(try download(downloadURL).body, bytes, "the part's bytes, never the envelope")

        // The part's name and filename are free; its bytes are what counts.
        let other = try postMultipart(try uploadURL(alice, record: name), multipartBody([9, 8, 7], boundary: "b", name: "x", filename: "y"),
                                      boundary: "b")
        XCTAssertEqual(other.body["singleFile"]?["size"]?.int64Value, 3, other.body.serializedString())
    }

    /// 16 MB, not more: a debug build's multipart parser takes over a second a megabyte, and a body
    /// twice the allowed growth already tells a streamed upload from a held one.
    func testA16MBMultipartUploadIsStreamed() throws {
        let alice = try makeUser("alice").token
        try createZone(zone, alice)
        let size = 16 * 1024 * 1024
        // Generated a word at a time (a byte at a time takes long in a debug build).
        var generator = SplitMix64(seed: 50)
        let bytes = [UInt64](unsafeUninitializedCapacity: size / 8) { words, count in
            for index in 0..<words.count { words[index] = generator.next() }
            count = words.count
        }.withUnsafeBytes { Array($0) }
        let body = multipartBody(bytes, boundary: "big-boundary-16")
        let url = try uploadURL(alice, record: uniqueName("Person"))
        try ProcessStat.resetPeakMemory(of: try daemon.pid)
        let before = try ProcessStat.memory(of: try daemon.pid)
        let started = Date()
        let answer = try postMultipart(url, body, boundary: "big-boundary-16")
        let after = try ProcessStat.memory(of: try daemon.pid)
        print("16 MB multipart upload answered in \(Date().timeIntervalSince(started)) s")
        XCTAssertEqual(answer.status, 200, answer.body.serializedString())
        XCTAssertEqual(answer.body["singleFile"]?["size"]?.int64Value, Int64(size))
        XCTAssertEqual(answer.body["singleFile"]?["fileChecksum"]?.stringValue, Data(SHA256Hasher.digest(bytes)).base64EncodedString())
        print("scorebookd during a 16 MB multipart upload: resident \(before.resident) MB before, peak \(after.peak) MB")
        XCTAssertLessThan(after.peak - before.resident, 8, "the upload is streamed, not held (16 MB)")
    }

    func testUploadsOfOtherContentTypesAreRefused() throws {
        let alice = try makeUser("alice").token
        try createZone(zone, alice)
        let name = uniqueName("Person")
        for type in ["application/json", "text/plain", "application/x-www-form-urlencoded", "multipart/mixed; boundary=x"] {
            let refused = try daemon.request("POST", try pathOf(try uploadURL(alice, record: name)), headers: [("Content-Type", type)],
                                             body: [1, 2, 3]).parsed()
            assertError(refused, 400, "BAD_REQUEST", type)
        }
        let url = try uploadURL(alice, record: name)
        assertError(try daemon.request("POST", try pathOf(url), headers: [("Content-Type", "multipart/form-data")], body: [1]).parsed(),
                    400, "BAD_REQUEST", "multipart without its boundary")
        XCTAssertEqual(try put(url, [4, 5, 6]).status, 200, "a refused content type leaves the URL unspent")
        let part = "Content-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n"
        let twoParts = "--two\r\n\(part)one\r\n--two\r\n\(part)two\r\n--two--\r\n"
        assertError(try postMultipart(try uploadURL(alice, record: name), Array(twoParts.utf8), boundary: "two"), 400, "BAD_REQUEST", "two file parts")
        assertError(try postMultipart(try uploadURL(alice, record: name), Array("not multipart at all".utf8), boundary: "zz"), 400, "BAD_REQUEST",
                    "a body without its boundary")
    }
}
