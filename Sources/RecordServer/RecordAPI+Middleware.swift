import Foundation
import HTTPTypes
import Hummingbird
import Logging
import RecordModel
import RecordStore
import Synchronization

/// Counts each request in the metrics under its route's label, writes its log line, and hands a
/// caller that authenticated with `ckWebAuthToken` the token to use next. Outside the error
/// middleware, so a failure is logged and counted with the status it is answered with; it also
/// reads the request's facts once for everything inside (`RequestFacts`).
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = ConnectionRequestContext
    let api: RecordAPI
    let trustedProxies: [AddressRange]
    let labels: EndpointLabels

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        var context = context
        context.facts = RequestFacts(request, peer: context.channel?.remoteAddress?.ipAddress, trustedProxies: trustedProxies)
        let inner = context
        var response: Response
        do {
            response = try await RequestCaller.$current.withValue(context.caller) {
                try await ShareRules.$requestLinkBase.withValue(api.baseURL(inner.facts)) { try await next(request, inner) }
            }
        } catch {
            // The error middleware renders every error: one from outside it is a bug, still answered.
            response = ErrorAnswer.response(ServerError(.internalError, "the request could not be answered"), requestID: context.requestID,
                                            logger: api.logger)
        }
        // CloudKit answers a ckWebAuthToken request with the token to use next; ours do not rotate.
        if let webAuthToken = context.caller.webAuthToken {
            response.headers.append(HTTPField(name: RequestFacts.webAuthTokenHeader, value: webAuthToken))
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let operation = labels.label(of: context.endpointPath)
        let status = Int(response.status.code)
        api.metrics.record(operation: operation, status: status, seconds: seconds)
        if status == 503 { api.metrics.storeUnavailableAnswered() }
        // One structured line per request; errors at info so they show by default. The line's
        // metadata is made only when it is written (formatting it was a few microseconds a request).
        let level: Logger.Level = status >= 500 ? .error : status >= 400 ? .info : .debug
        if api.logger.logLevel <= level {
            let metadata: Logger.Metadata = [
                "request": .string(context.requestID), "operation": .string(operation), "status": .stringConvertible(status),
                "ms": .string(String(format: "%.2f", seconds * 1000)),
                "user": .string(context.caller.userRecordName ?? "-"), "client": .string(context.facts.clientAddress ?? "-"),
            ]
            api.logger.log(level: level, level == .error ? "request failed" : level == .info ? "request rejected" : "request", metadata: metadata)
        }
        return response
    }
}

/// The metrics label of each route, by the endpoint the router names it by
/// (`context.endpointPath`, the route's pattern, never the request's path): noted as the routes
/// are declared, read once a request. A path no route takes is `other`.
final class EndpointLabels: Sendable {
    private let labels = Mutex<[String: String]>([:])

    func note(_ endpoint: String, _ label: String) { labels.withLock { $0[endpoint] = label } }

    func label(of endpoint: String?) -> String {
        guard let endpoint else { return "other" }
        return labels.withLock { $0[endpoint] } ?? "other"
    }
}

/// Renders whatever the middleware and routes inside throw as CloudKit's error dictionary
/// (`ErrorAnswer`), with the request's own id; for `AUTHENTICATION_REQUIRED` from a browser app,
/// with the sign-in page's `redirectURL`. The one error path: the JSON API's, the asset URLs', a
/// refused body's, a path no route takes.
struct ErrorAnswerMiddleware: RouterMiddleware {
    typealias Context = ConnectionRequestContext
    let api: RecordAPI

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let answer = ErrorAnswer.serverError(error, requestID: context.requestID, path: request.uri.path, logger: api.logger)
            let redirectURL = answer.code == .authenticationRequired
                ? context.parameters.get("container").flatMap { api.signInRedirectURL(context.facts, container: $0) } : nil
            var response = Response(ErrorAnswer.json(answer, requestID: context.requestID, redirectURL: redirectURL))
            if let refused = error as? RefusedRequest {
                response.status = refused.status
                for field in refused.headers { response.headers[field.name] = field.value }
            }
            return response
        }
    }
}

/// The first step of every database route: its body collected whole (before anything else, as a
/// body too large is refused whoever sends it), then the path's container and environment checked.
struct DatabaseAddressMiddleware: RouterMiddleware {
    typealias Context = ConnectionRequestContext
    let maximumBodyBytes: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.body = try await RecordAPI.collectBody(request, upTo: maximumBodyBytes)
        let container = context.parameters.get("container") ?? ""
        try DatabaseScope.validateContainer(container)
        guard let environment = context.parameters.get("environment").flatMap(RecordStore.Environment.init(rawValue:)) else {
            throw ServerError.badRequest("environment must be development or production")
        }
        context.address = DatabaseAddress(container: container, environment: environment)
        return try await next(request, context)
    }
}

/// Finds a database route's caller as its operation declares (`DatabaseOperation.Caller`), and
/// holds it to the rate limit: the user (`context.user`) and the scope the operation acts in
/// (`context.scope`). The order of the checks is the API's: a server-to-server signature first,
/// then a bare courier request, then the user's token; an unauthenticated request is refused as
/// such whatever its body.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = ConnectionRequestContext
    let api: RecordAPI
    let caller: DatabaseOperation.Caller
    /// `private`, `shared`, `public`, `tokens` or `courier`.
    let database: String
    /// The operation's path in its database, for the refusal of an anonymous caller.
    let operation: String
    /// `records/modify`: its body is read into drafts while the caller's token is checked.
    var readsRecordDrafts = false

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        guard let address = context.address else { throw ServerError(.internalError, "a database route without its address") }
        let facts = context.facts
        if case .publicDatabase(let anonymousRead) = caller {
            let scope = try await api.publicScope(facts, body: context.body, address: address)
            if scope.isAnonymous && !anonymousRead {
                throw ServerError(.authenticationRequired, "\(operation) on the public database needs a user: send a web auth token")
            }
            try api.admit(userID: scope.userID)
            context.scope = scope
            return try await next(request, context)
        }
        if let signed = SignedRequest(facts) {
            guard caller == .userOrServerKey else { throw ServerError(.authenticationFailed, "server-to-server keys work on the public database only") }
            // A key acts as its own user.
            let user = try await api.verifyServerKey(signed, body: context.body, path: facts.path)
            context.user = user
            context.scope = DatabaseScope(user: user, container: address.container, environment: address.environment)
            return try await next(request, context)
        }
        // The courier URL is its own credential (CloudKit JS polls it bare).
        if caller == .courier, facts.authorization == nil, facts.webAuthToken == nil { return try await next(request, context) }
        let user: User
        if readsRecordDrafts, facts.method == .post {
            // The batch's body is read into drafts while its token is checked on the store's
            // read pool, so the check's thread hop and read cost the batch no time. Errors keep
            // their order: an unauthenticated request is refused as such, whatever its body.
            async let checked = api.authenticate(facts)
            let body = context.body
            context.parsedModifyBody = ParsedModifyBody(Result { try ModifyRequestBody.parse(body) })
            user = try await checked
        } else {
            user = try await api.authenticate(facts)
        }
        if facts.authorization == nil { RequestCaller.noteWebAuthToken(facts.webAuthToken) }
        try api.admit(userID: user.id)
        context.user = user
        // The shared database's operations act on the zones shared with the caller.
        context.scope = DatabaseScope(user: user, container: address.container, environment: address.environment,
                                      kind: database == "shared" ? .shared : .private)
        return try await next(request, context)
    }
}

extension RecordAPI {
    /// The per-user rate limit: `THROTTLED` with the wait when the caller is over it.
    func admit(userID: Int64) throws {
        if let wait = rateLimiter.acquire(userID: userID) {
            throw ServerError(.throttled, "too many requests; retry after \(wait) s", retryAfter: wait)
        }
    }
}
