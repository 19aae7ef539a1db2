import Foundation
import RecordClient
import RecordModel
import RecordServer

/// An `HTTPTransport` that hands each request straight to a real `RecordAPI` (over a real
/// `SQLiteRecordStore`): the whole wire path of the client (URLs, headers, JSON) and of the
/// server (routing, authentication, error mapping), without sockets. A long-poll the API parks
/// waits on an in-memory connection (`RecordAPI.parkInMemory`), answered by the push hub while
/// `api.pushHub.run()` runs, or empty at its timeout.
final class InProcessTransport: HTTPTransport {
    let api: RecordAPI
    /// What `tokens/create` names as the host of the courier URL.
    static let host = "reliability.invalid"

    init(api: RecordAPI) {
        self.api = api
    }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: true)
        let method: APIRequest.Method = request.method == "GET" ? .get : request.method == "POST" ? .post : .other
        var apiRequest = APIRequest(
            method: method, path: request.url.path, query: APIRequest.parseQuery(components?.percentEncodedQuery ?? ""),
            authorization: header("Authorization", in: request), deviceID: header("X-Device-ID", in: request),
            body: request.body ?? [])
        apiRequest.host = Self.host
        apiRequest.accept = header("Accept", in: request)
        let response = await api.handle(apiRequest)
        guard let parking = response.parking else { return HTTPResponse(status: response.status, body: response.body) }
        guard case .longPoll = parking.kind else {
            // An HTTP response here is whole: an event stream has no end to wait for.
            throw RecordClientError.invalidResponse("the in-process transport does not carry event streams; use RecordAPI.parkInMemory")
        }
        let connection = await api.parkInMemory(parking)
        let answer = await withTaskCancellationHandler {
            await connection.answer()
        } onCancel: {
            connection.disconnect()
        }
        try Task.checkCancellation()
        return HTTPResponse(status: response.status, body: answer)
    }

    private func header(_ name: String, in request: HTTPRequest) -> String? {
        request.headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

