import Foundation
import Logging
import RecordModel
import RecordStore

/// What every request passes through on its way to its route and back: the request log and
/// metrics outside, the rendering of errors inside, so a thrown error is logged and counted with
/// the status it is answered with.
protocol APIMiddleware: Sendable {
    func respond(to request: APIRequest, context: APIRequestContext, api: RecordAPI,
                 next: (APIRequest) async throws -> APIResponse) async throws -> APIResponse
}

/// One request's own facts for the middleware: its id (the `uuid` of its errors) and its route.
struct APIRequestContext: Sendable {
    let requestID: String
    let route: APIRouteTable<RecordAPI>.Route?
    /// Who the request turned out to be (noted by the routes that authenticate).
    let caller = RequestCaller()
}

extension RecordAPI {
    /// Outermost first.
    static let middleware: [any APIMiddleware] = [RequestLogMiddleware(), ErrorMiddleware()]

    /// Answers one request: finds its route, then runs it through the middleware.
    package func handle(_ request: APIRequest) async -> APIResponse {
        let context = APIRequestContext(requestID: request.requestID, route: RecordAPI.routes.route(for: request))
        return await RequestCaller.$current.withValue(context.caller) {
            await ShareRules.$requestLinkBase.withValue(baseURL(request)) {
                do {
                    return try await respond(to: request, context: context, through: RecordAPI.middleware[...])
                } catch {
                    // The error middleware renders every error: one from outside it is a bug, still answered.
                    return ErrorAnswer.json(ServerError(.internalError, "the request could not be answered"), requestID: context.requestID)
                }
            }
        }
    }

    private func respond(to request: APIRequest, context: APIRequestContext,
                         through middleware: ArraySlice<any APIMiddleware>) async throws -> APIResponse {
        guard let first = middleware.first else { return try await route(request, context: context) }
        return try await first.respond(to: request, context: context, api: self) { request in
            try await self.respond(to: request, context: context, through: middleware.dropFirst())
        }
    }

    /// The innermost step: the route's handler, or the API's `404` for a path no route takes.
    private func route(_ request: APIRequest, context: APIRequestContext) async throws -> APIResponse {
        guard let route = context.route, case .api(let handler) = route.target else {
            throw ServerError(.notFound, "no such endpoint: \(request.path.prefix(200))")
        }
        return try await handler(self, request)
    }
}

/// Renders what a route throws (`ErrorAnswer`); for `AUTHENTICATION_REQUIRED` from a browser
/// app, with the sign-in page's `redirectURL`.
struct ErrorMiddleware: APIMiddleware {
    func respond(to request: APIRequest, context: APIRequestContext, api: RecordAPI,
                 next: (APIRequest) async throws -> APIResponse) async throws -> APIResponse {
        do {
            return try await next(request)
        } catch {
            let answer = ErrorAnswer.serverError(error, requestID: context.requestID, logger: api.logger)
            let redirectURL = answer.code == .authenticationRequired ? api.signInRedirectURL(request) : nil
            return ErrorAnswer.json(answer, requestID: context.requestID, redirectURL: redirectURL)
        }
    }
}

/// Counts each request in the metrics under its route's label, writes its log line, and hands a
/// caller that authenticated with `ckWebAuthToken` the token to use next.
struct RequestLogMiddleware: APIMiddleware {
    func respond(to request: APIRequest, context: APIRequestContext, api: RecordAPI,
                 next: (APIRequest) async throws -> APIResponse) async throws -> APIResponse {
        let started = ContinuousClock.now
        var response = try await next(request)
        // CloudKit answers a ckWebAuthToken request with the token to use next; ours do not rotate.
        if let webAuthToken = context.caller.webAuthToken { response.headers.append((APIResponse.webAuthTokenHeader, webAuthToken)) }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let operation = context.route?.label(request) ?? "other"
        api.metrics.record(operation: operation, status: response.status, seconds: seconds)
        if response.status == 503 { api.metrics.storeUnavailableAnswered() }
        // One structured line per request; errors at info so they show by default. The line's
        // metadata is made only when it is written (formatting it was a few microseconds a request).
        let level: Logger.Level = response.status >= 500 ? .error : response.status >= 400 ? .info : .debug
        if api.logger.logLevel <= level {
            let metadata: Logger.Metadata = [
                "request": .string(context.requestID), "operation": .string(operation), "status": .stringConvertible(response.status),
                "ms": .string(String(format: "%.2f", seconds * 1000)),
                "user": .string(context.caller.userRecordName ?? "-"), "client": .string(request.clientAddress ?? "-"),
            ]
            api.logger.log(level: level, level == .error ? "request failed" : level == .info ? "request rejected" : "request", metadata: metadata)
        }
        return response
    }
}
