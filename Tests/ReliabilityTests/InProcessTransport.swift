import Foundation
import RecordClient
import RecordModel
import RecordServer

/// An `HTTPTransport` that hands each request straight to a real `RecordAPI`'s router (over a
/// real `SQLiteRecordStore`): the whole wire path of the client (URLs, headers, JSON) and of the
/// server (routing, middleware, authentication, error mapping), without sockets. A long-poll the
/// API parks waits on an in-memory connection (`RecordAPI.parkInMemory`), answered by the push
/// hub while `api.pushHub.run()` runs, or empty at its timeout.
final class InProcessTransport: HTTPTransport {
    let api: RecordAPI
    let responder: InProcessResponder
    /// What `tokens/create` names as the host of the courier URL.
    static let host = "reliability.invalid"

    init(api: RecordAPI) {
        self.api = api
        self.responder = InProcessResponder(api: api)
    }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: true)
        let uri = request.url.path + (components?.percentEncodedQuery.map { "?" + $0 } ?? "")
        // Answers come back as they are: a socket transport is what inflates gzip ones.
        let headers = request.headers.filter { $0.key.caseInsensitiveCompare("Accept-Encoding") != .orderedSame }.map { ($0.key, $0.value) }
        let answer = try await responder.respond(method: request.method, uri: uri, authority: Self.host, headers: headers, body: request.body ?? [])
        guard let parking = answer.parking else { return HTTPResponse(status: answer.status, body: answer.body) }
        guard case .longPoll = parking.kind else {
            // An HTTP response here is whole: an event stream has no end to wait for.
            throw RecordClientError.invalidResponse("the in-process transport does not carry event streams; use RecordAPI.parkInMemory")
        }
        let connection = await api.parkInMemory(parking)
        let body = await withTaskCancellationHandler {
            await connection.answer()
        } onCancel: {
            connection.disconnect()
        }
        try Task.checkCancellation()
        return HTTPResponse(status: answer.status, body: body)
    }
}
