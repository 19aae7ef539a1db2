import RecordModel
import RecordStore

/// The public database: one per container and environment, `_defaultZone` only.
/// Users read and write it as themselves; a request with only a valid `ckAPIToken` reads it.
/// Who may change which record is the store's rule (`AccessRules`), checked in its transaction.
/// Its routes find their caller with `publicScope` (`AuthenticationMiddleware`).
extension RecordAPI {
    /// The caller: a user (bearer or web auth token), a server-to-server key acting as its user,
    /// or an anonymous reader with a valid API token.
    func publicScope(_ request: RequestFacts, body: [UInt8], address: DatabaseAddress) async throws -> DatabaseScope {
        if let signed = SignedRequest(request) {
            let user = RequestCaller.identified(try await verifyServerKey(signed, body: body, path: request.path))
            return .publicDatabase(caller: user, container: address.container, environment: address.environment, isServerKey: true)
        }
        if request.authorization != nil || request.webAuthToken != nil {
            let user = try await authenticate(request)
            if request.authorization == nil { RequestCaller.noteWebAuthToken(request.webAuthToken) }
            return .publicDatabase(caller: user, container: address.container, environment: address.environment)
        }
        if let apiToken = request.query["ckAPIToken"] {
            guard try await store.isValidAPIToken(apiToken) else {
                throw ServerError(.authenticationFailed, "unknown ckAPIToken")
            }
            return .publicDatabase(caller: nil, container: address.container, environment: address.environment)
        }
        throw ServerError(.authenticationRequired, "send Authorization: Bearer TOKEN, ckAPIToken (to read), or a server-to-server key's signature")
    }
}
