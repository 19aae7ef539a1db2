import HTTPTypes
import Hummingbird

/// Which web pages, by origin, may call the API from the browser (`serve --allow-origin`).
/// An origin not allowed gets no CORS headers at all, so the browser keeps its page from reading
/// the answers; clients that are not browsers send no `Origin` and see no difference.
package struct CrossOriginPolicy: Sendable {
    package var allowedOrigins: Set<String>
    package var allowsAnyOrigin: Bool

    package init(allowedOrigins: [String] = [], allowsAnyOrigin: Bool = false) {
        self.allowedOrigins = Set(allowedOrigins)
        self.allowsAnyOrigin = allowsAnyOrigin
    }

    package func allows(_ origin: String) -> Bool { allowsAnyOrigin || allowedOrigins.contains(origin) }

    /// The API's own URLs: databases, device tokens, couriers (under `/database/`) and assets.
    static func covers(_ path: String) -> Bool {
        path.hasPrefix("/database/") || path.hasPrefix("/device/") || AssetURLs.handles(path)
    }

    /// The request headers CloudKit clients send.
    static let allowedHeaders = [
        "Content-Type", "Authorization", "Accept", "Last-Event-ID", "X-Device-ID", "X-Apple-CloudKit-Request-KeyID",
        "X-Apple-CloudKit-Request-ISO8601Date", "X-Apple-CloudKit-Request-SignatureV1", "X-Apple-CloudKit-Web-Auth-Token",
    ].joined(separator: ", ")

    func addHeaders(for origin: String, to headers: inout HTTPFields) {
        headers[.accessControlAllowOrigin] = origin
        headers[.accessControlAllowHeaders] = CrossOriginPolicy.allowedHeaders
        headers[.accessControlExposeHeaders] = APIResponse.webAuthTokenHeader
        headers.append(HTTPField(name: .vary, value: "Origin"))
    }
}

/// Answers CORS preflights for allowed origins (no credentials needed, as browsers send none)
/// and adds the CORS headers to every other answer to them; everything else passes through.
struct CrossOriginMiddleware: RouterMiddleware {
    typealias Context = ConnectionRequestContext
    let policy: CrossOriginPolicy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin], policy.allows(origin), CrossOriginPolicy.covers(request.uri.path) else {
            return try await next(request, context)
        }
        if request.method == .options {
            var headers: HTTPFields = [.accessControlAllowMethods: "GET, POST, OPTIONS", .accessControlMaxAge: "600"]
            policy.addHeaders(for: origin, to: &headers)
            return Response(status: .noContent, headers: headers)
        }
        var response = try await next(request, context)
        policy.addHeaders(for: origin, to: &response.headers)
        return response
    }
}
