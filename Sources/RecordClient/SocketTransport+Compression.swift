import Foundation

/// gzip on the wire: every answer is asked for with `Accept-Encoding: gzip` and inflated when it
/// comes compressed (a server that does not compress answers as before), and large
/// `records/modify` batches go out compressed.
extension SocketTransport {
    /// Batches from this size on are sent gzip-compressed: below it, compressing costs more time
    /// than the bytes it saves on a fast link.
    package static let compressedBatchBytes = 64 * 1024
    /// An answer that inflates beyond this is refused (no page of changes comes near it).
    static let maximumAnswerBytes = 1 << 30

    /// `request`, with its body gzip-compressed when it is a large `records/modify` batch.
    static func compressingLargeBatch(_ request: HTTPRequest) throws -> HTTPRequest {
        guard request.method == "POST", let body = request.body, body.count >= compressedBatchBytes,
            request.url.path.hasSuffix("/records/modify"),
            !request.headers.keys.contains(where: { $0.lowercased() == "content-encoding" })
        else { return request }
        var compressed = request
        compressed.body = try Gzip.compress(body)
        compressed.headers["Content-Encoding"] = "gzip"
        if !request.headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
            compressed.headers["Content-Type"] = "application/json"
        }
        return compressed
    }
}
