import CompressNIO
import Hummingbird
import NIOCore
import RecordModel

/// Inflates a gzip-compressed request body a window at a time and refuses it as soon as its
/// inflated size passes `limit`: a small body that inflates to gigabytes (a zip bomb) costs one
/// window of memory and is refused without being inflated further.
final class GzipBodyInflater {
    /// The most one step writes: a single 64 KB read of zeros inflates to 64 MB, so a step never
    /// inflates a whole read at once.
    static let windowBytes = 256 * 1024

    let limit: Int
    private(set) var inflatedBytes = 0
    private let decompressor: any NIODecompressor
    /// The step before made no progress, though it had input and room: the member had ended.
    private var memberEnded = false

    init(limit: Int) throws {
        self.limit = limit
        decompressor = CompressionAlgorithm.gzip().decompressor
        try decompressor.startStream()
    }

    deinit { try? decompressor.finishStream() }

    static let corrupt = ServerError.badRequest("the request body is not valid gzip (Content-Encoding: gzip)")
    static let truncated = ServerError.badRequest("the gzip request body ends before its gzip stream does")

    /// Inflates from `input` until the window is full or the input is used up (`final`: no more
    /// input will come, so what zlib still holds is drained and the stream must have ended).
    /// Returns what was inflated, possibly nothing.
    func inflate(_ input: inout ByteBuffer, final: Bool) throws -> ByteBuffer {
        var output = ByteBufferAllocator().buffer(capacity: Self.windowBytes)
        while output.writableBytes > 0, input.readableBytes > 0 || final {
            let (readBefore, writtenBefore) = (input.readableBytes, output.readableBytes)
            do {
                try decompressor.streamInflate(from: &input, to: &output)
            } catch let error as CompressNIOError where error == .bufferOverflow {
                break  // the window is full
            } catch let error as CompressNIOError where error == .inputBufferOverflow {
                // zlib wants more input: fine mid-body, a truncated stream at its end.
                if final { throw Self.truncated }
                break
            } catch let error as CompressNIOError where error == .noMoreMemory {
                throw ServerError(.internalError, "out of memory inflating the request body")
            } catch {
                throw Self.corrupt
            }
            let progressed = input.readableBytes != readBefore || output.readableBytes != writtenBefore
            if progressed {
                memberEnded = false
                continue
            }
            // No progress with input and room left: the gzip member has ended. Bytes after it are
            // another member (RFC 1952 allows several in a row); nothing after it is the end.
            if input.readableBytes == 0 { break }
            guard !memberEnded else { throw Self.corrupt }
            memberEnded = true
            try decompressor.resetStream()
        }
        inflatedBytes += output.readableBytes
        if inflatedBytes > limit {
            throw ServerError(.limitExceeded, "the request body inflates to more than \(limit) bytes")
        }
        return output
    }

    /// An empty buffer whose bytes have storage (zlib is handed its address).
    static func emptyInput() -> ByteBuffer {
        var buffer = ByteBuffer(bytes: [0])
        buffer.moveReaderIndex(forwardBy: 1)
        return buffer
    }
}

/// A request body with `Content-Encoding: gzip`, inflated as it is read (`GzipBodyInflater`).
/// An empty body stays empty.
struct InflatingRequestBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let compressed: RequestBody
    let limit: Int
    let counters: CompressionCounters

    struct AsyncIterator: AsyncIteratorProtocol {
        var upstream: RequestBody.AsyncIterator
        let limit: Int
        let counters: CompressionCounters
        var inflater: GzipBodyInflater?
        var pending = GzipBodyInflater.emptyInput()
        var upstreamEnded = false
        var sawInput = false

        mutating func next() async throws -> ByteBuffer? {
            while true {
                if pending.readableBytes == 0, !upstreamEnded {
                    if let piece = try await upstream.next() {
                        counters.requestReceived(compressedBytes: piece.readableBytes)
                        if piece.readableBytes > 0 { pending = piece; sawInput = true }
                        continue
                    }
                    upstreamEnded = true
                }
                guard sawInput else { return nil }
                if inflater == nil { inflater = try GzipBodyInflater(limit: limit) }
                let inflated = try inflater!.inflate(&pending, final: upstreamEnded)
                counters.requestInflated(bytes: inflated.readableBytes)
                if inflated.readableBytes > 0 { return inflated }
                if upstreamEnded { return nil }
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(upstream: compressed.makeAsyncIterator(), limit: limit, counters: counters)
    }
}
