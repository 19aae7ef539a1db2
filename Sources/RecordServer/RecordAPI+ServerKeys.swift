import Foundation
import RecordModel
import RecordStore

/// Server-to-server keys: a signed request acts as the key's user.
extension RecordAPI {
    /// The user of the key that signed the request (`body` to `path`); `AUTHENTICATION_FAILED` for an unknown key or a
    /// bad or expired signature.
    func verifyServerKey(_ signed: SignedRequest, body: [UInt8], path: String) async throws -> User {
        guard let key = try await store.serverKey(keyID: signed.keyID) else {
            throw ServerError(.authenticationFailed, "unknown server-to-server key")
        }
        try signed.verify(key: key, body: body, path: path, now: Date())
        return key.user
    }
}
