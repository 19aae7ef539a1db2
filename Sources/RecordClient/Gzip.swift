import CZlib

/// gzip for the CLI's HTTP transport, straight on zlib (`CZlib`): the daemon's compress-nio
/// would bring SwiftNIO into every `scorebook` command for two functions.
package enum Gzip {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// zlib's fastest level: a batch of records still shrinks to a fifth or less.
    package static let level: Int32 = 1

    /// `bytes` as one gzip stream.
    package static func compress(_ bytes: [UInt8], level: Int32 = Gzip.level) throws -> [UInt8] {
        let deflater = try GzipDeflater(level: level)
        var out = try deflater.deflate(bytes, finish: false)
        out += try deflater.deflate([], finish: true)
        return out
    }

    /// The bytes of a gzip stream (several members in a row too); throws when it is corrupt or
    /// truncated, or inflates to more than `limit` bytes.
    package static func decompress(_ bytes: [UInt8], limit: Int) throws -> [UInt8] {
        // zlib keeps the stream's address: it lives at one place until the end.
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer { stream.deallocate() }
        // 16 + 15: a gzip header and trailer around a 32 KB window.
        guard inflateInit2_(stream, 16 + MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw Failure(description: "zlib could not start inflating")
        }
        defer { inflateEnd(stream) }
        // A gzip trailer ends with the inflated size (mod 2^32): room for it at once, no regrowing.
        let inflatedHint = bytes.count >= 18 ? bytes.suffix(4).reversed().reduce(0) { $0 << 8 | Int($1) } : 0
        var out: [UInt8] = []
        out.reserveCapacity(min(limit, max(inflatedHint, bytes.count * 4, 4096)))
        var piece = [UInt8](repeating: 0, count: 256 * 1024)
        var offset = 0
        while true {
            let (consumed, produced, result) = Gzip.step(stream, bytes[offset...], into: &piece) { inflate($0, Z_NO_FLUSH) }
            offset += consumed
            out.append(contentsOf: piece[0..<produced])
            guard out.count <= limit else { throw Failure(description: "the answer inflates to more than \(limit) bytes") }
            if result == Z_STREAM_END {
                guard offset < bytes.count else { return out }
                inflateReset(stream)  // another member follows
                continue
            }
            // Z_BUF_ERROR: no progress possible, the input ended before the stream did.
            guard result == Z_OK else {
                throw Failure(description: result == Z_BUF_ERROR ? "the gzip answer is truncated" : "the gzip answer is corrupt")
            }
        }
    }
}

extension Gzip {
    /// One call of zlib (`call`, inflate or deflate) from `input` into `output`: the bytes it took,
    /// the bytes it wrote, and its result.
    static func step(_ stream: UnsafeMutablePointer<z_stream>, _ input: ArraySlice<UInt8>, into output: inout [UInt8],
                     _ call: (UnsafeMutablePointer<z_stream>) -> Int32) -> (consumed: Int, produced: Int, result: Int32)
    {
        input.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { output in
                stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.pointee.avail_in = UInt32(input.count)
                stream.pointee.next_out = output.baseAddress
                stream.pointee.avail_out = UInt32(output.count)
                let result = call(stream)
                return (input.count - Int(stream.pointee.avail_in), output.count - Int(stream.pointee.avail_out), result)
            }
        }
    }
}

/// A gzip stream compressed a piece at a time (a large body is never held twice).
package final class GzipDeflater {
    /// zlib keeps the stream's address: allocated once, never moved.
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)

    package init(level: Int32 = Gzip.level) throws {
        stream.initialize(to: z_stream())
        guard deflateInit2_(stream, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                            Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else {
            stream.deallocate()
            throw Gzip.Failure(description: "zlib could not start deflating")
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    /// Compresses `bytes`; `finish` ends the stream (its trailer follows). Returns what zlib wrote.
    package func deflate(_ bytes: [UInt8], finish: Bool) throws -> [UInt8] {
        var out: [UInt8] = []
        var piece = [UInt8](repeating: 0, count: 64 * 1024)
        var offset = 0
        while true {
            let (consumed, produced, result) = Gzip.step(stream, bytes[offset...], into: &piece) {
                CZlib.deflate($0, finish ? Z_FINISH : Z_NO_FLUSH)
            }
            offset += consumed
            out.append(contentsOf: piece[0..<produced])
            if result == Z_STREAM_END { return out }
            guard result == Z_OK || result == Z_BUF_ERROR else { throw Gzip.Failure(description: "zlib failed deflating (\(result))") }
            // Without finish, done once the input is taken and zlib stopped filling whole pieces.
            if !finish && offset == bytes.count && produced < piece.count { return out }
        }
    }
}
