import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RecordModel
import RecordStore

/// The two URLs that move asset bytes, routes that never collect the body (their errors, log
/// line and metrics are every route's, from the router's middleware):
/// an upload is streamed to a staging file while it is hashed, a download streamed from the
/// store a piece at a time, so however large the asset and however many move at once, the daemon
/// holds only a piece of each in memory.
struct AssetTransfer {
    /// How much of an upload is gathered before each write to its staging file.
    static let writeBytes = 1024 * 1024

    let api: RecordAPI

    /// The upload URL's route: the rest of the path names the upload.
    func upload(_ request: Request) async throws -> Response {
        guard request.method == .post else { throw ServerError.badRequest("upload with POST") }
        return try await upload(id: String(request.uri.path.dropFirst(AssetURLs.uploadPath.count)), request: request)
    }

    /// The download URL's route: the rest of the path is the signed grant.
    func download(_ request: Request) async throws -> Response {
        guard request.method == .get || request.method == .head else { throw ServerError.badRequest("download with GET") }
        return try await download(token: String(request.uri.path.dropFirst(AssetURLs.downloadPath.count)), request: request)
    }

    // MARK: Upload

    func upload(id: String, request: Request) async throws -> Response {
        let maximum = AssetLimits.maximumBytes
        // A gzip body's Content-Length counts its compressed bytes: only the inflated size is checked.
        let declared = ContentCoding(request.headers[.contentEncoding]) == .identity ? request.headers[.contentLength].flatMap { Int64($0) } : nil
        // The content type is checked before the URL is spent: a refused body leaves it usable.
        var write: (ByteBuffer) throws -> Void = { _ in }
        let body: AssetUploadBody
        do {
            body = try AssetUploadBody(contentType: request.headers[.contentType]) { try write($0) }
        } catch let error as ServerError {
            throw RefusedRequest.closingConnection(error)
        }
        if let declared, declared > maximum + (body.isMultipart ? AssetUploadBody.envelopeAllowance : 0) {
            throw RefusedRequest.closingConnection(ServerError(.limitExceeded, "an asset is at most \(maximum) bytes; this one is \(declared)"))
        }
        let now = RecordAPI.nowMilliseconds()
        guard let upload = try await api.store.claimAssetUpload(id: id, createdAfter: now - AssetLimits.uploadURLMilliseconds) else {
            throw RefusedRequest.closingConnection(.badRequest("this upload URL is unknown, used or expired; ask assets/upload for another"))
        }
        let staged = (try api.store.assetStagingDirectory() as NSString).appendingPathComponent(id)
        guard FileManager.default.createFile(atPath: staged, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forWritingAtPath: staged)
        else { throw ServerError(.internalError, "cannot stage the upload") }
        var digest = AssetDigest()
        do {
            defer { try? handle.close() }
            // The body arrives in reads of up to 64 KB: gathered into 1 MB before each write.
            var pending = ByteBufferAllocator().buffer(capacity: AssetTransfer.writeBytes)
            // The file's bytes (from the body as it is, or from its one multipart part).
            write = { buffer in
                buffer.withUnsafeReadableBytes { digest.update($0) }
                if digest.size > maximum { throw RefusedRequest.closingConnection(ServerError(.limitExceeded, "an asset is at most \(maximum) bytes")) }
                var incoming = buffer
                pending.writeBuffer(&incoming)
                if pending.readableBytes >= AssetTransfer.writeBytes {
                    try pending.withUnsafeReadableBytes { try handle.write(contentsOf: $0) }
                    pending.clear()
                }
            }
            var received: Int64 = 0
            for try await buffer in request.body {
                received += Int64(buffer.readableBytes)
                if received > maximum + AssetUploadBody.envelopeAllowance {
                    throw RefusedRequest.closingConnection(ServerError(.limitExceeded, "an asset is at most \(maximum) bytes"))
                }
                try body.feed(buffer)
            }
            try body.finish()
            if pending.readableBytes > 0 { try pending.withUnsafeReadableBytes { try handle.write(contentsOf: $0) } }
            if let declared, declared != received {
                throw RefusedRequest.closingConnection(.badRequest("the upload ended after \(received) of \(declared) bytes"))
            }
            guard digest.size > 0 else { throw RefusedRequest(.badRequest("an asset needs at least one byte")) }
        } catch {
            // Nothing of a refused or truncated upload is kept, and its URL stays spent.
            try? FileManager.default.removeItem(atPath: staged)
            if error is RefusedRequest { throw error }
            if let error = error as? ServerError { throw RefusedRequest.closingConnection(error) }
            throw RefusedRequest.closingConnection(.badRequest("the upload did not arrive whole"))
        }
        let blob = AssetBlob(scopeKey: upload.scopeKey, checksum: digest.finish(), size: digest.size)
        let receipt = RandomToken.hex(bytes: 24)
        do {
            try await api.store.completeAssetUpload(id: id, blob: blob, stagedFile: staged, receipt: receipt)
        } catch {
            try? FileManager.default.removeItem(atPath: staged)
            throw error
        }
        let checksum = AssetChecksum.wire(hex: blob.checksum)
        // `referenceChecksum` and `wrappingKey` are CloudKit's encryption fields: the bytes are not
        // encrypted here, so they carry the checksum and an empty key for clients that expect them.
        let answer: JSONValue = [
            "singleFile": [
                "fileChecksum": .string(checksum), "size": .int(blob.size), "receipt": .string(receipt),
                "referenceChecksum": .string(checksum), "wrappingKey": .string(""),
            ],
        ]
        return Response(APIResponse(status: 200, json: answer))
    }

    // MARK: Download

    func download(token: String, request: Request) async throws -> Response {
        let key = try await api.assetSigningKey()
        let missing = ServerError(.notFound, "no such asset")
        guard let grant = DownloadGrant(token: token, key: key) else { throw missing }
        guard grant.expires > RecordAPI.nowMilliseconds() else {
            throw ServerError(.authenticationFailed, "this download URL has expired; fetch the record again for a new one")
        }
        // The caller must still be able to read the record, and the record must still hold the asset.
        let current: StoredRecord?
        do {
            current = try await api.store.lookupRecords(grant.scope, zone: grant.zone, recordNames: [grant.recordName]).first?.get()
        } catch let error as ServerError where error.code != .tryAgainLater && error.code != .internalError {
            throw missing
        }
        guard let current,
            AssetFields.checksums(inFieldsJSON: current.fieldsJSON).contains(where: { $0.field == grant.fieldName && $0.checksum == grant.checksum }),
            let blob = try await api.store.assetBlob(scopeKey: grant.assetScopeKey, checksum: grant.checksum)
        else { throw missing }

        let etag = "\"\(blob.checksum)\""
        var headers: HTTPFields = [
            .contentType: "application/octet-stream", .eTag: etag, .acceptRanges: "bytes", .cacheControl: "private, max-age=3600",
        ]
        if let match = request.headers[.ifNoneMatch], match == "*" || match.split(separator: ",").contains(where: {
            $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "W/", with: "") == etag
        }) {
            return Response(status: .notModified, headers: headers)
        }
        var status = HTTPResponse.Status.ok
        var range = Int64(0)..<blob.size
        if let header = request.headers[.range] {
            switch AssetTransfer.parseRange(header, size: blob.size) {
            case .whole: break
            case .part(let part):
                range = part
                status = .partialContent
                headers[.contentRange] = "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(blob.size)"
            case .unsatisfiable:
                throw RefusedRequest(.badRequest("the range is outside the asset's \(blob.size) bytes"), status: .rangeNotSatisfiable,
                                     headers: [.contentRange: "bytes */\(blob.size)"])
            }
        }
        headers[.contentLength] = String(range.count)
        if request.method == .head { return Response(status: status, headers: headers) }
        let store = api.store
        let pieceBytes = Int64(store.assetPieceBytes)
        let sent = range
        return Response(status: status, headers: headers, body: ResponseBody(contentLength: Int(sent.count)) { writer in
            var position = sent.lowerBound
            while position < sent.upperBound {
                let piece = try await store.readAssetBlob(blob, offset: position,
                                                          maximumLength: Int(min(pieceBytes, sent.upperBound - position)))
                guard piece.readableBytes > 0 else { throw ServerError(.internalError, "the asset's bytes end early") }
                position += Int64(piece.readableBytes)
                try await writer.write(piece)
            }
            try await writer.finish(nil)
        })
    }

    enum RangeRequest: Equatable {
        case whole
        case part(Range<Int64>)
        case unsatisfiable
    }

    /// One `bytes=` range (`a-b`, `a-`, `-n`); anything else, several ranges included, is the
    /// whole asset, as RFC 9110 allows a server to answer.
    static func parseRange(_ header: String, size: Int64) -> RangeRequest {
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.hasPrefix("bytes="), !text.contains(",") else { return .whole }
        let spec = text.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return .whole }
        let first = spec[0].trimmingCharacters(in: .whitespaces), last = spec[1].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            guard let suffix = Int64(last), suffix > 0 else { return .whole }
            return .part(max(0, size - suffix)..<size)
        }
        guard let start = Int64(first), start >= 0 else { return .whole }
        guard start < size else { return .unsatisfiable }
        if last.isEmpty { return .part(start..<size) }
        guard let end = Int64(last), end >= start else { return .whole }
        return .part(start..<min(end + 1, size))
    }
}
