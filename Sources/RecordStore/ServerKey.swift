import Crypto
import Foundation
import RecordModel

/// A server-to-server key: a P-256 public key that signs requests to the public
/// database, acting as its own user.
package struct ServerKey: Sendable {
    /// 64 hex digits: SHA-256 of the key's DER encoding, so adding the same key twice finds it.
    package var keyID: String
    /// The public key, DER (SubjectPublicKeyInfo).
    package var publicKeyDER: [UInt8]
    package var user: User

    package init(keyID: String, publicKeyDER: [UInt8], user: User) {
        self.keyID = keyID
        self.publicKeyDER = publicKeyDER
        self.user = user
    }
}

/// The rules of server-to-server keys, for every backend.
package enum ServerKeyRules {
    /// Reads a PEM public key (`openssl ec -pubout`) or a PEM private key (`openssl ecparam
    /// -genkey`: its public half is taken) and returns its DER encoding and key id.
    /// A file may hold several blocks (`openssl ecparam -genkey` writes the curve's parameters first).
    package static func parse(pem: String) throws -> (der: [UInt8], keyID: String) {
        for block in blocks(pem) {
            let key: P256.Signing.PublicKey
            if let publicKey = try? P256.Signing.PublicKey(pemRepresentation: block) {
                key = publicKey
            } else if let privateKey = try? P256.Signing.PrivateKey(pemRepresentation: block) {
                key = privateKey.publicKey
            } else {
                continue
            }
            let der = Array(key.derRepresentation)
            return (der, TokenHash.hex(der))
        }
        throw ServerError.badRequest("not a PEM-encoded P-256 (prime256v1) key")
    }

    /// Each `-----BEGIN …-----` … `-----END …-----` block of a PEM file.
    static func blocks(_ pem: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in pem.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("-----BEGIN ") { current = [] }
            current?.append(Substring(trimmed))
            if trimmed.hasPrefix("-----END "), let lines = current {
                blocks.append(lines.joined(separator: "\n"))
                current = nil
            }
        }
        return blocks
    }

    /// The user a key acts as.
    package static func userName(keyID: String) -> String { "key-" + keyID.prefix(16) }

    package static func label(_ name: String?, keyID: String) -> String {
        let trimmed = name?.trimmingCharacters(in: .whitespaces) ?? ""
        return trimmed.isEmpty ? userName(keyID: keyID) : String(trimmed.prefix(255))
    }

    package static func wellFormedKeyID(_ keyID: String) -> Bool {
        keyID.utf8.count == 64 && keyID.utf8.allSatisfy { $0.isHexDigit }
    }
}

/// SHA-256 of secrets and keys, as lowercase hex (tokens are stored only as these hashes).
package enum TokenHash {
    package static func hex(_ text: String) -> String { hex(Array(text.utf8)) }

    package static func hex<D: DataProtocol>(_ bytes: D) -> String {
        // Digits by table: `String(format:)` a byte was 1 % of a batch write's CPU (a hash a request).
        let digest = Crypto.SHA256.hash(data: bytes)
        return String(unsafeUninitializedCapacity: 64) { buffer in
            var end = 0
            for byte in digest {
                buffer[end] = hexDigits[Int(byte >> 4)]
                buffer[end + 1] = hexDigits[Int(byte & 0xF)]
                end += 2
            }
            return end
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
