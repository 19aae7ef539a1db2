import CompressNIO
import NIOCore
import RecordModel
@testable import RecordServer
import XCTest

/// The bound on inflating gzip request bodies: decided a window at a time, so a body that
/// inflates past the limit is refused having inflated at most one window beyond it.
final class GzipBodyInflaterTests: XCTestCase {
    func gzip(_ bytes: [UInt8], level: Int32 = 6) throws -> ByteBuffer {
        var input = ByteBuffer(bytes: bytes)
        return try input.compress(with: .gzip(configuration: .init(compressionLevel: level)))
    }

    /// Feeds `compressed` in pieces of `pieceBytes` and gathers what comes out, recording the
    /// largest single step.
    func inflateAll(_ compressed: ByteBuffer, limit: Int, pieceBytes: Int = 4096) throws -> (bytes: [UInt8], largestStep: Int) {
        let inflater = try GzipBodyInflater(limit: limit)
        var out: [UInt8] = []
        var largest = 0
        var remaining = compressed
        while remaining.readableBytes > 0 {
            var piece = remaining.readSlice(length: min(pieceBytes, remaining.readableBytes))!
            while piece.readableBytes > 0 {
                let step = try inflater.inflate(&piece, final: false)
                largest = max(largest, step.readableBytes)
                out += step.readableBytesView
            }
        }
        var end = GzipBodyInflater.emptyInput()
        for _ in 0..<10_000 {
            let step = try inflater.inflate(&end, final: true)
            largest = max(largest, step.readableBytes)
            if step.readableBytes == 0 { break }
            out += step.readableBytesView
        }
        return (out, largest)
    }

    func testABodyInflatesWholeInPiecesOfAnySize() throws {
        var generator = SystemRandomNumberGenerator()
        let text = (0..<20_000).map { "record \($0) \(UInt64.random(in: 0...999, using: &generator))\n" }.joined()
        let bytes = Array(text.utf8)
        for pieceBytes in [1, 7, 4096, 1 << 20] {
            let (inflated, _) = try inflateAll(try gzip(bytes), limit: bytes.count, pieceBytes: pieceBytes)
            XCTAssertEqual(inflated, bytes, "pieces of \(pieceBytes)")
        }
    }

    func testInflatingPastTheLimitStopsWithinOneWindow() throws {
        // 64 MB of zeros: about 64 KB compressed, a single read's worth.
        let bomb = try gzip([UInt8](repeating: 0, count: 64 << 20), level: 9)
        XCTAssertLessThan(bomb.readableBytes, 100_000)
        let inflater = try GzipBodyInflater(limit: 1 << 20)
        var input = bomb
        var inflated = 0
        var refusal: ServerError?
        for _ in 0..<1000 {
            do {
                let step = try inflater.inflate(&input, final: false)
                XCTAssertLessThanOrEqual(step.readableBytes, GzipBodyInflater.windowBytes, "one window a step")
                inflated += step.readableBytes
            } catch let error as ServerError {
                refusal = error
                break
            }
        }
        XCTAssertEqual(refusal?.code, .limitExceeded)
        XCTAssertLessThanOrEqual(inflater.inflatedBytes, (1 << 20) + GzipBodyInflater.windowBytes, "stopped a window past the limit at most")
        XCTAssertGreaterThan(input.readableBytes, 0, "the rest of the bomb was never inflated")
    }

    func testCorruptAndTruncatedBodiesAreBadRequests() throws {
        let bytes = Array(String(repeating: "scorebook ", count: 1000).utf8)
        let whole = Array(try gzip(bytes).readableBytesView)
        var flipped = whole
        flipped[whole.count - 5] ^= 0x55  // the length in the trailer
        for (label, body) in [("truncated", Array(whole.dropLast(3))), ("a wrong trailer", flipped), ("not gzip", bytes)] {
            XCTAssertThrowsError(try inflateAll(ByteBuffer(bytes: body), limit: 1 << 20), label) { error in
                XCTAssertEqual((error as? ServerError)?.code, .badRequest, "\(label): \(error)")
            }
        }
        // Two members in a row are one body.
        let (twice, _) = try inflateAll(ByteBuffer(bytes: whole + whole), limit: 1 << 20)
        XCTAssertEqual(twice, bytes + bytes)
    }

    func testAcceptEncodingAndContentEncodingAreParsed() {
        XCTAssertFalse(AcceptEncoding.allowsGzip(nil))
        XCTAssertFalse(AcceptEncoding.allowsGzip("identity"))
        XCTAssertFalse(AcceptEncoding.allowsGzip("gzip;q=0"))
        XCTAssertFalse(AcceptEncoding.allowsGzip("gzip;q=0, *;q=1"))
        XCTAssertTrue(AcceptEncoding.allowsGzip("deflate, gzip;q=0.001"))
        XCTAssertTrue(AcceptEncoding.allowsGzip("*"))
        XCTAssertEqual(ContentCoding(nil), .identity)
        XCTAssertEqual(ContentCoding(" Identity "), .identity)
        XCTAssertEqual(ContentCoding("GZIP"), .gzip)
        XCTAssertEqual(ContentCoding("gzip, br"), .unsupported("gzip, br"))
    }
}
