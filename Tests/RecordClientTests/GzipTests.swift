@testable import RecordClient
import XCTest

/// The CLI's zlib wrapper: what it compresses inflates back, and what it inflates is bounded and
/// checked.
final class GzipTests: XCTestCase {
    func testCompressedBytesInflateBackAndLargeBatchesGoCompressed() throws {
        let bytes = Array((0..<5000).map { "{\"recordName\":\"r\($0)\"}," }.joined().utf8)
        let compressed = try Gzip.compress(bytes)
        XCTAssertEqual(Array(compressed.prefix(2)), [0x1F, 0x8B], "a gzip header")
        XCTAssertLessThan(compressed.count, bytes.count / 4)
        XCTAssertEqual(try Gzip.decompress(compressed, limit: bytes.count), bytes)
        XCTAssertEqual(try Gzip.decompress(try Gzip.compress([]), limit: 0), [])

        let url = URL(string: "http://127.0.0.1:1/database/1/c/development/private/records/modify")!
        let large = try SocketTransport.compressingLargeBatch(HTTPRequest(method: "POST", url: url, body: bytes))
        XCTAssertEqual(large.headers["Content-Encoding"], "gzip")
        XCTAssertEqual(try Gzip.decompress(large.body ?? [], limit: bytes.count), bytes)
        let small = try SocketTransport.compressingLargeBatch(HTTPRequest(method: "POST", url: url, body: Array(bytes.prefix(1000))))
        XCTAssertNil(small.headers["Content-Encoding"])
        let otherOperation = URL(string: "http://127.0.0.1:1/database/1/c/development/private/records/lookup")!
        XCTAssertNil(try SocketTransport.compressingLargeBatch(HTTPRequest(method: "POST", url: otherOperation, body: bytes)).headers["Content-Encoding"])
    }

    func testBrokenOrOversizedStreamsAreRefused() throws {
        let bytes = [UInt8](repeating: 7, count: 100_000)
        let compressed = try Gzip.compress(bytes)
        XCTAssertThrowsError(try Gzip.decompress(Array(compressed.dropLast(4)), limit: 1 << 20), "truncated")
        XCTAssertThrowsError(try Gzip.decompress(Array("plain".utf8), limit: 1 << 20), "not gzip")
        XCTAssertThrowsError(try Gzip.decompress(compressed, limit: 50_000), "over the limit") { error in
            XCTAssertTrue("\(error)".contains("more than 50000"), "\(error)")
        }
    }
}
