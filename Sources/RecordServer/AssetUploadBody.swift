import MultipartKit
import NIOCore
import RecordModel

/// An upload's body as it arrives: the file's raw bytes (`application/octet-stream`, or no
/// content type), or a `multipart/form-data` envelope around one file part, as OpenCloudKit and
/// browsers' `FormData` send it. Either way only the file's bytes are handed on, piece by piece,
/// so a large upload is never held whole; any other content type is refused before it is read.
final class AssetUploadBody {
    private let parser: MultipartParser?
    private let write: (ByteBuffer) throws -> Void
    private var parts = 0
    private var failure: (any Error)?

    init(contentType: String?, write: @escaping (ByteBuffer) throws -> Void) throws {
        self.write = write
        guard let contentType, !contentType.isEmpty else {
            parser = nil
            return
        }
        let parameters = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        switch parameters.first?.lowercased() {
        case "application/octet-stream":
            parser = nil
        case "multipart/form-data":
            let boundary = parameters.dropFirst().compactMap { parameter -> String? in
                let pair = parameter.split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2, pair[0].lowercased() == "boundary" else { return nil }
                return pair[1].hasPrefix("\"") && pair[1].hasSuffix("\"") && pair[1].count >= 2 ? String(pair[1].dropFirst().dropLast()) : pair[1]
            }.first
            guard let boundary, (1...200).contains(boundary.utf8.count) else {
                throw ServerError.badRequest("a multipart/form-data upload needs its boundary parameter")
            }
            parser = MultipartParser(boundary: boundary)
        default:
            throw ServerError.badRequest("upload the file's bytes as application/octet-stream or as one part of multipart/form-data, not \(contentType.prefix(100))")
        }
        parser?.onBody = { [unowned self] buffer in
            guard failure == nil else { return }
            if parts > 0 {
                failure = ServerError.badRequest("a multipart upload carries one file part")
                return
            }
            do { try self.write(buffer) } catch { failure = error }
        }
        parser?.onPartComplete = { [unowned self] in parts += 1 }
    }

    /// How many envelope bytes a multipart body may add to the file's limit.
    static let envelopeAllowance: Int64 = 64 * 1024

    var isMultipart: Bool { parser != nil }

    func feed(_ buffer: ByteBuffer) throws {
        guard let parser else { return try write(buffer) }
        do { try parser.execute(buffer) } catch { throw ServerError.badRequest("the multipart/form-data body is malformed") }
        if let failure { throw failure }
    }

    /// Checks a multipart body ended with its one part complete.
    func finish() throws {
        guard parser != nil else { return }
        guard parts == 1 else { throw ServerError.badRequest("a multipart upload carries exactly one file part, this one \(parts)") }
    }
}
