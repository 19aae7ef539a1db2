import RecordModel
import RecordStore

/// The public database: one per container and environment, `_defaultZone` only.
/// Users read and write it as themselves; a request with only a valid `ckAPIToken` reads it.
/// Who may change which record is the store's rule (`AccessRules`), checked in its transaction.
extension RecordAPI {
    /// A public-database operation (`DatabaseOperation.Caller.publicDatabase`): the caller found
    /// and rate-limited, then the operation run in the public scope.
    func answerPublic(_ request: APIRequest, route: Route, operation: DatabaseOperation, anonymousRead: Bool) async throws -> APIResponse {
        let scope = try await publicScope(request, route: route)
        if scope.isAnonymous && !anonymousRead {
            throw ServerError(.authenticationRequired, "\(route.operation) on the public database needs a user: send a web auth token")
        }
        if let wait = rateLimiter.acquire(userID: scope.userID) {
            throw ServerError(.throttled, "too many requests; retry after \(wait) s", retryAfter: wait)
        }
        return try await run(operation, OperationCall(request: request, route: route, user: nil, scope: scope))
    }

    /// The caller: a user (bearer or web auth token), a server-to-server key acting as its user,
    /// or an anonymous reader with a valid API token.
    func publicScope(_ request: APIRequest, route: Route) async throws -> DatabaseScope {
        if let signed = SignedRequest(request) {
            let user = RequestCaller.identified(try await verifyServerKey(signed, request: request))
            return .publicDatabase(caller: user, container: route.container, environment: route.environment, isServerKey: true)
        }
        if request.authorization != nil || request.webAuthToken != nil {
            let user = try await authenticate(request)
            if request.authorization == nil { RequestCaller.noteWebAuthToken(request.webAuthToken) }
            return .publicDatabase(caller: user, container: route.container, environment: route.environment)
        }
        if let apiToken = request.query["ckAPIToken"] {
            guard try await store.isValidAPIToken(apiToken) else {
                throw ServerError(.authenticationFailed, "unknown ckAPIToken")
            }
            return .publicDatabase(caller: nil, container: route.container, environment: route.environment)
        }
        throw ServerError(.authenticationRequired, "send Authorization: Bearer TOKEN, ckAPIToken (to read), or a server-to-server key's signature")
    }
}
