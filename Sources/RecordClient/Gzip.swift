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
        var stream = z_stream()
        // 16 + 15: a gzip header and trailer around a 32 KB window.
        guard inflateInit2_(&stream, 16 + MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw Failure(description: "zlib could not start inflating")
        }
        defer { inflateEnd(&stream) }
        var out: [UInt8] = []
        out.reserveCapacity(min(limit, max(bytes.count * 4, 4096)))
        var piece = [UInt8](repeating: 0, count: 256 * 1024)
        var offset = 0
        var status = Z_OK
        while true {
            let (consumed, produced, result) = bytes.withUnsafeBufferPointer { input in
                piece.withUnsafeMutableBufferPointer { output in
                    stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress.map { $0 + offset })
                    stream.avail_in = UInt32(input.count - offset)
                    stream.next_out = output.baseAddress
                    stream.avail_out = UInt32(output.count)
                    let result = inflate(&stream, Z_NO_FLUSH)
                    return (input.count - offset - Int(stream.avail_in), output.count - Int(stream.avail_out), result)
                }
            }
            offset += consumed
            out.append(contentsOf: piece[0..<produced])
            status = result
            guard out.count <= limit else { throw Failure(description: "the answer inflates to more than \(limit) bytes") }
            if result == Z_STREAM_END {
                guard offset < bytes.count else { return out }
                inflateReset(&stream)  // another member follows
                continue
            }
            // Z_BUF_ERROR: no progress possible, the input ended before the stream did.
            guard result == Z_OK else { break }
        }
        throw Failure(description: status == Z_BUF_ERROR || status == Z_OK ? "the gzip answer is truncated" : "the gzip answer is corrupt")
    }
}

/// A gzip stream compressed a piece at a time (a large body is never held twice).
package final class GzipDeflater {
    private var stream = z_stream()

    package init(level: Int32 = Gzip.level) throws {
        guard deflateInit2_(&stream, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                            Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else { throw Gzip.Failure(description: "zlib could not start deflating") }
    }

    deinit { deflateEnd(&stream) }

    /// Compresses `bytes`; `finish` ends the stream (its trailer follows). Returns what zlib wrote.
    package func deflate(_ bytes: [UInt8], finish: Bool) throws -> [UInt8] {
        var out: [UInt8] = []
        var piece = [UInt8](repeating: 0, count: 64 * 1024)
        var offset = 0
        while true {
            let (consumed, produced, result) = bytes.withUnsafeBufferPointer { input in
                piece.withUnsafeMutableBufferPointer { output in
                    stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress.map { $0 + offset })
                    stream.avail_in = UInt32(input.count - offset)
                    stream.next_out = output.baseAddress
                    stream.avail_out = UInt32(output.count)
                    let result = CZlib.deflate(&stream, finish ? Z_FINISH : Z_NO_FLUSH)
                    return (input.count - offset - Int(stream.avail_in), output.count - Int(stream.avail_out), result)
                }
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
