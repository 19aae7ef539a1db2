import CompressNIO
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
    /// zlib's fastest level: JSON of records still shrinks to a fifth or less, at a fraction of
    /// the time the default level (6) takes (BENCHMARKS.md, `change-feed-gzip`).
    static let level: Int32 = 1

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
            let compressor = CompressionAlgorithm.gzip(configuration: .init(compressionLevel: Self.level)).compressor
            try compressor.startStream()
            defer { try? compressor.finishStream() }
            try await body.write(GzipResponseWriter(parent: writer, compressor: compressor, counters: counters))
        }
        return response
    }
}

/// Compresses what an answer writes before handing it on, a window at a time.
struct GzipResponseWriter: ResponseBodyWriter {
    var parent: any ResponseBodyWriter
    let compressor: any NIOCompressor
    let counters: CompressionCounters
    static let windowBytes = 64 * 1024

    mutating func write(_ buffer: ByteBuffer) async throws {
        var input = buffer
        try await deflate(&input, flush: .no)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        var nothing = GzipBodyInflater.emptyInput()
        try await deflate(&nothing, flush: .finish)
        try await parent.finish(trailingHeaders)
    }

    private mutating func deflate(_ input: inout ByteBuffer, flush: CompressNIOFlush) async throws {
        while true {
            var output = ByteBufferAllocator().buffer(capacity: Self.windowBytes)
            var outputFull = false
            do {
                try compressor.streamDeflate(from: &input, to: &output, flush: flush)
            } catch let error as CompressNIOError where error == .bufferOverflow {
                outputFull = true
            }
            if output.readableBytes > 0 {
                counters.compressedAnswerWrote(bytes: output.readableBytes)
                try await parent.write(output)
            }
            // Finishing ends when zlib has written its trailer; otherwise when the input is taken.
            if flush == .finish ? !outputFull : input.readableBytes == 0 && !outputFull { return }
        }
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
