import CLibdeflate
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RecordModel
import RecordStore
import Synchronization

/// gzip on the wire, both ways. Request bodies sent with `Content-Encoding: gzip` are inflated
/// as they are read, bounded by the same limits as plain bodies (`GzipBodyInflater`); any other
/// coding is refused with 415. Answers over `minimumBytes` are compressed when the request's
/// `Accept-Encoding` allows gzip, except event streams, parked long-polls (their bodies are
/// written later, by the push hub) and asset downloads (pictures are compressed already).
struct CompressionMiddleware: RouterMiddleware {
    typealias Context = ConnectionRequestContext
    /// The inflated size a JSON body may reach (`HTTPServerConfiguration.maximumBodyBytes`).
    let maximumBodyBytes: Int
    let counters: CompressionCounters

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var request = request
        switch ContentCoding(request.headers[.contentEncoding]) {
        case .identity:
            break
        case .gzip:
            let limit = request.uri.path.hasPrefix(AssetURLs.uploadPath)
                ? Int(AssetLimits.maximumBytes + AssetUploadBody.envelopeAllowance) : maximumBodyBytes
            counters.compressedRequestArrived()
            request.body = RequestBody(asyncSequence: InflatingRequestBody(compressed: request.body, limit: limit, counters: counters))
        case .unsupported(let coding):
            let error = ServerError.badRequest("Content-Encoding '\(coding.prefix(100))' is not supported; send gzip or identity")
            throw RefusedRequest.closingConnection(error, status: .unsupportedMediaType, headers: [.acceptEncoding: "gzip, identity"])
        }
        let acceptsGzip = AcceptEncoding.allowsGzip(request.headers[.acceptEncoding])
        let response = try await next(request, context)
        return AnswerCompression.compressed(response, acceptsGzip: acceptsGzip, request: request, counters: counters)
    }
}

/// Which answers are compressed, and how.
enum AnswerCompression {
    /// Smaller answers are sent as they are: gzip's 20 bytes of framing would eat the gain.
    static let minimumBytes = 1024
    /// `response`, gzip-compressed as it is written when it qualifies.
    static func compressed(_ response: Response, acceptsGzip: Bool, request: Request, counters: CompressionCounters) -> Response {
        guard request.method != .head, response.headers[.contentEncoding] == nil,
            response.status.code >= 200, response.status != .noContent, response.status != .notModified,
            let length = response.body.contentLength, length > Self.minimumBytes,
            response.headers[.contentType]?.hasPrefix("text/event-stream") != true,
            !request.uri.path.hasPrefix(AssetURLs.downloadPath)
        else { return response }
        var response = response
        // The answer differs by Accept-Encoding from here on, whichever this request got.
        response.headers.append(HTTPField(name: .vary, value: "Accept-Encoding"))
        guard acceptsGzip else { return response }
        response.headers[.contentEncoding] = "gzip"
        response.headers[.contentLength] = nil
        let body = response.body
        counters.compressedAnswerStarted(identityBytes: length)
        response.body = ResponseBody { writer in
            // The answers compressed here are JSON written whole (their length is known): gathered
            // as written, usually the one buffer they already are, then compressed in one call.
            let gathered = GatheringResponseWriter()
            try await body.write(gathered)
            let compressed = try GzipAnswer.compress(gathered.bytes)
            counters.compressedAnswerWrote(bytes: compressed.readableBytes)
            try await writer.write(compressed)
            try await writer.finish(gathered.trailingHeaders)
        }
        return response
    }
}

/// An answer's body as it is written: kept as the buffer written when there is one, joined
/// when there are more. Unchecked: written by the one body writing into it, then read after
/// that write ended.
final class GatheringResponseWriter: ResponseBodyWriter, @unchecked Sendable {
    private(set) var bytes = ByteBuffer()
    private(set) var trailingHeaders: HTTPFields?

    func write(_ buffer: ByteBuffer) async throws {
        if bytes.readableBytes == 0 {
            bytes = buffer  // the first buffer kept as it is, not copied
        } else {
            var buffer = buffer
            bytes.writeBuffer(&buffer)
        }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {
        self.trailingHeaders = trailingHeaders
    }
}

/// Whole-buffer gzip with libdeflate. Compressors (their match finders' tables) are kept for
/// reuse, a few at most, rather than allocated for each answer.
enum GzipAnswer {
    /// Unchecked: a compressor serves one answer at a time; the idle list hands it over under its lock.
    private struct Compressor: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// libdeflate's fastest level: JSON of records still shrinks to a fifth or less, at a
    /// fraction of the time higher levels take (BENCHMARKS.md, `change-feed-gzip`).
    static let level: Int32 = 1
    /// Compressors of `level`, idle.
    private static let idle = Mutex<[Compressor]>([])
    private static let maximumIdle = 8

    static func compress(_ input: ByteBuffer) throws -> ByteBuffer {
        guard let compressor = idle.withLock({ $0.popLast() }) ?? libdeflate_alloc_compressor(level).map(Compressor.init) else {
            throw ServerError(.internalError, "libdeflate could not allocate a compressor")
        }
        defer {
            let kept = idle.withLock { idle -> Bool in
                guard idle.count < maximumIdle else { return false }
                idle.append(compressor)
                return true
            }
            if !kept { libdeflate_free_compressor(compressor.pointer) }
        }
        let bound = libdeflate_gzip_compress_bound(compressor.pointer, input.readableBytes)
        var output = ByteBufferAllocator().buffer(capacity: bound)
        let written = input.withUnsafeReadableBytes { source in
            output.withUnsafeMutableWritableBytes { target in
                libdeflate_gzip_compress(compressor.pointer, source.baseAddress, source.count, target.baseAddress, target.count)
            }
        }
        // Only a bound too small gives 0; the bound is libdeflate's own.
        guard written > 0 else { throw ServerError(.internalError, "libdeflate could not compress an answer") }
        output.moveWriterIndex(forwardBy: written)
        return output
    }
}

/// A request's `Content-Encoding`.
enum ContentCoding: Equatable {
    case identity, gzip
    case unsupported(String)

    init(_ header: String?) {
        let codings = (header ?? "").lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && $0 != "identity" }
        switch codings {
        case []: self = .identity
        case ["gzip"], ["x-gzip"]: self = .gzip
        default: self = .unsupported(header ?? "")
        }
    }
}

/// `Accept-Encoding` (RFC 9110, section 12.5.3) as far as gzip goes: allowed when `gzip` (or
/// `x-gzip`, or `*` without its own gzip entry) has a q-value above zero. Absent means identity.
enum AcceptEncoding {
    static func allowsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        var gzip: Double?
        var wildcard: Double?
        for entry in header.split(separator: ",") {
            let parameters = entry.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let coding = parameters.first, !coding.isEmpty else { continue }
            var quality = 1.0
            for parameter in parameters.dropFirst() where parameter.hasPrefix("q=") {
                quality = Double(parameter.dropFirst(2).trimmingCharacters(in: .whitespaces)) ?? 0
            }
            switch coding {
            case "gzip", "x-gzip": gzip = max(gzip ?? 0, quality)
            case "*": wildcard = quality
            default: break
            }
        }
        return (gzip ?? wildcard ?? 0) > 0
    }
}
