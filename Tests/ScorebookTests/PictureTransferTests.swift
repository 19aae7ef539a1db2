import Foundation
import RecordClient
import RecordModel
import Synchronization
@testable import Scorebook
@testable import SyncEngine
import TestSupport
import XCTest

/// Pictures on one machine and on the wire, without the daemon: the store's picture directory
/// (copying, checksums, refusals), an upload streamed from its file, and a download cut off
/// half-way that resumes with a Range request for the rest only.
final class PictureTransferTests: XCTestCase {
    var directory: String!

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "scorebook-picture-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    func file(_ name: String, _ bytes: [UInt8]) -> String {
        let path = directory + "/" + name
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        return path
    }

    /// Bytes that differ from place to place, so a piece out of order would show.
    func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 / 251) } }

    func testAPictureIsCopiedUnderItsChecksumOnceAndWrittenBackByteForByte() throws {
        let bytes = pattern(2_500_000)  // more than one piece of the copy
        let files = PictureFiles(storePath: directory + "/store.sqlite")
        let picture = try files.add(fileAt: file("a.jpg", bytes))
        XCTAssertEqual(picture, PictureReference(checksum: SHA256Hasher.hex(SHA256Hasher.digest(bytes)), size: Int64(bytes.count)))
        XCTAssertEqual(FileManager.default.contents(atPath: files.path(of: picture.checksum)), Data(bytes))
        // The same bytes under another name are the same picture, kept once.
        XCTAssertEqual(try files.add(fileAt: file("copy.jpg", bytes)), picture)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: files.directory), [picture.checksum])
        XCTAssertTrue(files.isIntact(picture))
        try files.copy(picture, to: directory + "/out.jpg")
        XCTAssertEqual(FileManager.default.contents(atPath: directory + "/out.jpg"), Data(bytes))
        // The checksum on the wire is base64 of the digest, and reads back as the same picture.
        XCTAssertEqual(picture.wireChecksum, Data(SHA256Hasher.digest(bytes)).base64EncodedString())
        XCTAssertEqual(PictureReference(picture.fieldValue), picture)
        // A damaged file is noticed.
        XCTAssertTrue(FileManager.default.createFile(atPath: files.path(of: picture.checksum), contents: Data(pattern(2_500_001).dropFirst())))
        XCTAssertFalse(files.isIntact(picture))
    }

    func testEmptyMissingTooLargeAndDirectoryFilesAreRefusedWithOneLine() throws {
        let files = PictureFiles(storePath: directory + "/store.sqlite")
        let tooLarge = file("huge.jpg", [])
        // Sparse: 50 MB and one byte without writing them.
        XCTAssertEqual(truncate(tooLarge, off_t(PictureFiles.maximumBytes + 1)), 0)
        let cases: [(String, String)] = [
            (file("empty.jpg", []), "is empty"),
            (directory + "/missing.jpg", "no such file"),
            (tooLarge, "pictures are at most 52428800 bytes (50 MB)"),
            (directory, "is a directory"),
        ]
        for (path, expected) in cases {
            XCTAssertThrowsError(try files.add(fileAt: path), path) { error in
                let line = "\(error)"
                XCTAssertTrue(line.contains(expected), line)
                XCTAssertFalse(line.contains("\n"), line)
            }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: files.directory + "/adding.tmp-\(getpid())"))
    }

    func testAnUploadIsStreamedFromItsFileWithItsLength() async throws {
        let bytes = Array(String(repeating: "0123456789abcdef", count: 96 * 1024).utf8)  // 1.5 MB: two pieces
        let path = file("upload.bin", bytes)
        let server = try ScriptedServer { request, _, _ in
            let body = "{\"singleFile\":{\"fileChecksum\":\"x\",\"size\":\(request.count),\"receipt\":\"r\"}}"
            return "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        }
        defer { server.stop() }
        let transport = SocketTransport()
        let told = SentCounts()
        let request = HTTPRequest(method: "POST", url: server.url("/assets/1/upload/abc"), timeout: 10,
                                  bodyFile: HTTPBodyFile(path: path, size: Int64(bytes.count), progress: { told.append($0) }))
        let response = try await transport.send(request)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(told.values, [1 << 20, Int64(bytes.count)], "the bytes sent are told piece by piece")
        let sent = try XCTUnwrap(server.requests.first)
        XCTAssertTrue(sent.contains("Content-Length: \(bytes.count)\r\n"), String(sent.prefix(300)))
        XCTAssertTrue(sent.contains("Content-Type: application/octet-stream\r\n"), String(sent.prefix(300)))
        XCTAssertTrue(sent.hasSuffix("\r\n\r\n" + String(decoding: bytes, as: UTF8.self)), "the body is the file, whole")

        // A file that no longer holds its announced size is not sent as if whole.
        let short = HTTPRequest(method: "POST", url: server.url("/assets/1/upload/def"), timeout: 10,
                                bodyFile: HTTPBodyFile(path: path, size: Int64(bytes.count + 10)))
        do {
            _ = try await transport.send(short)
            XCTFail("a short file was sent")
        } catch RecordClientError.unreachable(let message) {
            XCTAssertTrue(message.contains("changed while it was being sent"), message)
        }
    }

    func testADownloadCutOffHalfWayResumesFromWhereItStoppedWithARangeRequest() async throws {
        // Printable bytes (the scripted server answers with text), one full range and a bit more.
        let size = ZoneSynchronizer.downloadRangeBytes + 300_000
        let asset: [UInt8] = (0..<size).map { (index: Int) -> UInt8 in
            let letter = (index &* 7 + index / 4093) % 26
            return UInt8(65 + letter)
        }
        let text = String(decoding: asset, as: UTF8.self)
        let cutOnce = CutOnce()
        let server = try ScriptedServer { request, _, _ in
            let head = String(decoding: request, as: UTF8.self)
            guard let line = head.components(separatedBy: "\r\n").first(where: { $0.lowercased().hasPrefix("range: bytes=") }) else {
                return "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
            }
            let bounds = line.dropFirst("range: bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
            let start = Int(bounds[0])!
            let end = min(bounds.count > 1 ? Int(bounds[1]) ?? size - 1 : size - 1, size - 1)
            let piece = text.utf8.dropFirst(start).prefix(end - start + 1)
            let headLines = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(start)-\(end)/\(size)\r\nContent-Length: \(piece.count)\r\n"
            // The second range is cut off half-way the first time: the connection drops.
            let cut = start > 0 && cutOnce.first()
            if cut { return headLines + "Connection: close\r\n\r\n" + String(decoding: piece.prefix(piece.count / 2), as: UTF8.self) }
            return headLines + "\r\n" + String(decoding: piece, as: UTF8.self)
        }
        defer { server.stop() }

        let store = try LocalRecordStore(path: directory + "/store.sqlite")
        let client = RecordClient(endpoint: ServerEndpoint(baseURL: server.url(""), token: "t"))
        let synchronizer = ZoneSynchronizer(store: store, database: client, zoneID: Scorebook.zoneID, sleep: { _ in })
        let picture = PictureReference(checksum: SHA256Hasher.hex(SHA256Hasher.digest(asset)), size: Int64(size))
        let files = PictureFiles(storePath: store.path)
        let url = server.url("/assets/1/download/x").absoluteString

        do {
            try await synchronizer.download(picture, from: url, progress: SyncProgressReporter(nil))
            XCTFail("a cut-off download finished")
        } catch {}
        XCTAssertFalse(files.has(picture))
        let kept = try FileManager.default.attributesOfItem(atPath: files.partialPath(of: picture))[.size] as? Int
        XCTAssertEqual(kept, ZoneSynchronizer.downloadRangeBytes, "the whole first range is kept")

        try await synchronizer.download(picture, from: url, progress: SyncProgressReporter(nil))
        XCTAssertEqual(FileManager.default.contents(atPath: files.path(of: picture.checksum)), Data(asset))
        XCTAssertFalse(FileManager.default.fileExists(atPath: files.partialPath(of: picture)))
        let ranges = server.requests.compactMap { request in
            request.components(separatedBy: "\r\n").first { $0.hasPrefix("Range: ") }
        }
        let first = "Range: bytes=0-\(ZoneSynchronizer.downloadRangeBytes - 1)"
        let rest = "Range: bytes=\(ZoneSynchronizer.downloadRangeBytes)-\(size - 1)"
        XCTAssertEqual(ranges, [first, rest, rest], "the resumed download asks only for what it lacks")
    }

    func testAnExpiredDownloadURLIsReplacedByLookingTheRecordUpAgain() async throws {
        let asset = Array("a small avatar, as text so the scripted server can send it".utf8)
        let picture = PictureReference(checksum: SHA256Hasher.hex(SHA256Hasher.digest(asset)), size: Int64(asset.count))
        let recordName = "Person|~|6F1C2D4E-0000-4000-8000-000000000001"
        let server = try ScriptedServer { request, _, _ in
            let head = String(decoding: request, as: UTF8.self)
            func answer(_ status: String, _ body: String, _ extra: String = "") -> String {
                "HTTP/1.1 \(status)\r\n\(extra)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
            if head.hasPrefix("GET /assets/stale") {
                return answer("401 Unauthorized", "{\"serverErrorCode\":\"AUTHENTICATION_FAILED\",\"reason\":\"the download URL expired\"}")
            }
            if head.hasPrefix("GET /assets/fresh") {
                return answer("206 Partial Content", String(decoding: asset, as: UTF8.self), "Content-Range: bytes 0-\(asset.count - 1)/\(asset.count)\r\n")
            }
            if head.contains("/records/lookup") {
                let fresh = "http://127.0.0.1:\(head.split(separator: "\r\n").first { $0.hasPrefix("Host: ") }!.split(separator: ":").last!)/assets/fresh"
                return answer("200 OK", """
                    {"records":[{"recordName":"\(recordName)","recordType":"Person","recordChangeTag":"t1","fields":{"avatar":\
                    {"type":"ASSETID","value":{"fileChecksum":"\(picture.wireChecksum)","size":\(asset.count),"downloadURL":"\(fresh)"}}}}]}
                    """)
            }
            return answer("404 Not Found", "{\"serverErrorCode\":\"NOT_FOUND\",\"reason\":\"?\"}")
        }
        defer { server.stop() }

        let store = try LocalRecordStore(path: directory + "/store.sqlite")
        let avatar = FieldValue.asset(["fileChecksum": .string(picture.wireChecksum), "size": .int(picture.size),
                                       "downloadURL": .string(server.url("/assets/stale").absoluteString)])
        try store.edit { try $0.save(Record(recordName: recordName, recordType: "Person", fields: ["firstName": .string("Ann"), "avatar": avatar])) }
        let client = RecordClient(endpoint: ServerEndpoint(baseURL: server.url(""), token: "t"))
        let synchronizer = ZoneSynchronizer(store: store, database: client, zoneID: Scorebook.zoneID, sleep: { _ in })
        var summary = SyncSummary()
        try await synchronizer.downloadMissingPictures(&summary, progress: SyncProgressReporter(nil))
        XCTAssertEqual(summary.picturesDownloaded, 1)
        let files = PictureFiles(storePath: store.path)
        XCTAssertEqual(FileManager.default.contents(atPath: files.path(of: picture.checksum)), Data(asset))
        let lines = server.requests.map { String($0.prefix { $0 != "\r" }) }
        XCTAssertEqual(lines.count, 3, "\(lines)")
        XCTAssertTrue(lines[0].hasPrefix("GET /assets/stale "), "\(lines)")
        XCTAssertTrue(lines[1].hasPrefix("POST ") && lines[1].contains("/records/lookup"), "\(lines)")
        XCTAssertTrue(lines[2].hasPrefix("GET /assets/fresh "), "\(lines)")
    }
}

/// True the first time it is asked, false after.
private final class CutOnce: Sendable {
    private let asked = Mutex(false)

    func first() -> Bool {
        asked.withLock { asked in
            defer { asked = true }
            return !asked
        }
    }
}

/// The byte counts an upload's progress was told, in order.
private final class SentCounts: Sendable {
    private let counts = Mutex<[Int64]>([])

    func append(_ count: Int64) { counts.withLock { $0.append(count) } }
    var values: [Int64] { counts.withLock { $0 } }
}
