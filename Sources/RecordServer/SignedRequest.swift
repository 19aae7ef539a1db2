import Crypto
import Foundation
import RecordModel
import RecordStore

/// A request signed with a server-to-server key: the DER ECDSA P-256 SHA-256
/// signature of `DATE:BASE64(SHA256(BODY)):SUBPATH`, SUBPATH being the path from `/database/…`
/// without host or query.
struct SignedRequest {
    var keyID: String
    var date: String
    var signature: String

    /// How far the signed date may be from the server's clock.
    static let allowedSkew: TimeInterval = 600

    /// Nil when the request carries none of the three headers.
    init?(_ request: RequestFacts) {
        guard request.serverKeyID != nil || request.signatureDate != nil || request.signature != nil else { return nil }
        keyID = request.serverKeyID ?? ""
        date = request.signatureDate ?? ""
        signature = request.signature ?? ""
    }

    /// The signed message.
    static func message(date: String, body: [UInt8], path: String) -> [UInt8] {
        let bodyHash = Data(Crypto.SHA256.hash(data: body)).base64EncodedString()
        return Array("\(date):\(bodyHash):\(path)".utf8)
    }

    /// Throws `AUTHENTICATION_FAILED` unless `key` signed this request within the allowed skew of `now`.
    func verify(key: ServerKey, body: [UInt8], path: String, now: Date) throws {
        guard let signedAt = SignedRequest.parseDate(date) else {
            throw ServerError(.authenticationFailed, "X-Apple-CloudKit-Request-ISO8601Date must be an ISO 8601 date, e.g. 2026-01-02T03:04:05Z")
        }
        guard abs(signedAt.timeIntervalSince(now)) <= SignedRequest.allowedSkew else {
            throw ServerError(.authenticationFailed, "the request's signed date is more than 10 minutes from the server's clock")
        }
        guard let signatureBytes = Data(base64Encoded: signature),
            let ecdsa = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes),
            let publicKey = try? P256.Signing.PublicKey(derRepresentation: key.publicKeyDER),
            publicKey.isValidSignature(ecdsa, for: SignedRequest.message(date: date, body: body, path: path))
        else { throw ServerError(.authenticationFailed, "the request's signature does not verify with key \(key.keyID)") }
    }

    static func parseDate(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }
}
