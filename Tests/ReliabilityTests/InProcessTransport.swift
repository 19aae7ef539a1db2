import Foundation
import RecordClient
import RecordModel
import RecordServer

/// An `HTTPTransport` that hands each request straight to a real `RecordAPI`'s router (over a
/// real `SQLiteRecordStore`): the whole wire path of the client (URLs, headers, JSON) and of the
/// server (routing, middleware, authentication, error mapping), without sockets.
final class InProcessTransport: HTTPTransport {
    let responder: InProcessResponder
    /// What `tokens/create` names as the host of the courier URL.
    static let host = "reliability.invalid"

    init(api: RecordAPI) {
        self.responder = InProcessResponder(api: api)
    }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: true)
        let uri = request.url.path + (components?.percentEncodedQuery.map { "?" + $0 } ?? "")
        // Answers come back as they are: a socket transport is what inflates gzip ones.
        let headers = request.headers.filter { $0.key.caseInsensitiveCompare("Accept-Encoding") != .orderedSame }.map { ($0.key, $0.value) }
        let answer = try await responder.respond(method: request.method, uri: uri, authority: Self.host, headers: headers, body: request.body ?? [])
        return HTTPResponse(status: answer.status, body: answer.body)
    }
}
