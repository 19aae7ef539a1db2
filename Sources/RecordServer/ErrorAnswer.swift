import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RecordModel
import RecordStore

/// The one rendering of a failed request: CloudKit's error dictionary (`serverErrorCode`,
/// `reason`, `uuid`, `retryAfter`…) with its code's status, `uuid` being the request's own id
/// (the `request` of its log line). The JSON API's errors, the asset URLs', a refused body's all
/// come from here, so no answer carries an id its request was not logged under.
enum ErrorAnswer {
    /// `redirectURL`: where a browser signs in, on `AUTHENTICATION_REQUIRED`.
    static func json(_ error: ServerError, requestID: String, redirectURL: String? = nil) -> APIResponse {
        var json = error.json(uuid: requestID)
        if let redirectURL, case .object(var members) = json {
            members["redirectURL"] = .string(redirectURL)
            json = .object(members)
        }
        return APIResponse(status: error.code.httpStatus, json: json)
    }

    /// What a failure is answered as: the API's own error as it is, a body that is not JSON as
    /// `BAD_REQUEST`; anything else is the store's, logged, and answered as what the client can do
    /// about it.
    /// `path`: the request's, named by the 404 of a path no route takes (the router's own).
    static func serverError(_ error: any Error, requestID: String, path: String, logger: Logger) -> ServerError {
        switch error {
        case let error as ServerError: return error
        case let error as RefusedRequest: return error.error
        case let error as JSONParseError: return .badRequest(error.description)
        case let error as HTTPError where error.status == .notFound: return .noSuchEndpoint(path)
        case let error as HTTPError where error.status == .contentTooLarge: return ServerError(.limitExceeded, error.body ?? "request body is too large")
        case let error as HTTPError where (400..<500).contains(error.status.code): return .badRequest(error.body ?? error.status.reasonPhrase)
        default:
            let answer = ServerError(storeFailure: error)
            logger.error("request failed: \(error)", metadata: ["request": .string(requestID), "serverErrorCode": .string(answer.code.rawValue)])
            return answer
        }
    }

    /// The HTTP response to any failure; a refused request keeps its own status and headers.
    static func response(_ error: any Error, requestID: String, path: String = "", logger: Logger) -> Response {
        var response = Response(json(serverError(error, requestID: requestID, path: path, logger: logger), requestID: requestID))
        if let refused = error as? RefusedRequest {
            response.status = refused.status
            for field in refused.headers { response.headers[field.name] = field.value }
        }
        return response
    }
}

/// A request refused before the API answers it (a body too large or in an unknown coding, an
/// asset upload cut short, a range outside the asset), answered as `error` with what HTTP needs
/// besides: a status of its own (415, 416) and headers (`Connection: close` when the rest of the
/// body was never read).
struct RefusedRequest: Error {
    var error: ServerError
    let status: HTTPResponse.Status
    var headers: HTTPFields

    init(_ error: ServerError, status: HTTPResponse.Status? = nil, headers: HTTPFields = [:]) {
        self.error = error
        self.status = status ?? HTTPResponse.Status(code: error.code.httpStatus)
        self.headers = headers
    }

    /// The body was not read to its end: the connection cannot carry another request.
    static func closingConnection(_ error: ServerError, status: HTTPResponse.Status? = nil, headers: HTTPFields = [:]) -> RefusedRequest {
        var headers = headers
        headers[.connection] = "close"
        return RefusedRequest(error, status: status, headers: headers)
    }
}

extension ServerError: HTTPResponseError {
    public var status: HTTPResponse.Status { HTTPResponse.Status(code: code.httpStatus) }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        ErrorAnswer.response(self, requestID: ConnectionRequestContext.requestID(of: context), path: request.uri.path, logger: context.logger)
    }
}

extension RefusedRequest: HTTPResponseError {
    func response(from request: Request, context: some RequestContext) throws -> Response {
        ErrorAnswer.response(self, requestID: ConnectionRequestContext.requestID(of: context), path: request.uri.path, logger: context.logger)
    }
}

extension ServerError {
    /// The API's answer to a path no route takes.
    static func noSuchEndpoint(_ path: String) -> ServerError { ServerError(.notFound, "no such endpoint: \(path.prefix(200))") }
}
