import Foundation
import RecordModel

/// A typed client of the Scorebook Sync HTTP API, for one user's private database.
///
/// ```swift
/// let client = RecordClient(endpoint: endpoint)
/// try await client.createZone(ZoneID(zoneName: "ScorebookData"))
/// let results = try await client.modifyRecords(zoneID: zone, operations: [.create(record)])
/// let page = try await client.fetchZoneChanges(zoneID: zone, syncToken: nil)
/// ```
///
/// Every call throws `RecordClientError`: `.server` for an answer with an error code,
/// `.unreachable` when no answer came back.
public struct RecordClient: Sendable {
    public let endpoint: ServerEndpoint
    let transport: any HTTPTransport
    /// Seconds to wait for an ordinary request.
    public var requestTimeout: TimeInterval = 30
    /// The database the record, zone and subscription calls address: `private` (the user's own),
    /// `shared` for zones others share with the caller or `public` (the
    /// container's).
    public var database = "private"

    /// The same client on another database scope.
    public func inDatabase(_ database: String) -> RecordClient {
        var client = self
        client.database = database
        return client
    }

    /// POSTs a raw JSON body to an operation of a database scope: the sharing calls whose
    /// shapes (share records, invitations, accept) the typed methods do not model.
    public func call(_ operation: String, _ body: JSONValue, database: String) async throws -> JSONValue {
        try await post(operation, body, database: database)
    }

    public init(endpoint: ServerEndpoint, transport: any HTTPTransport = SocketTransport()) {
        self.endpoint = endpoint
        self.transport = transport
    }

    var authorizationHeaders: [String: String] {
        ["Authorization": "Bearer \(endpoint.token)", "Accept": "application/json"]
    }

    /// POSTs `body` to a database operation and returns the parsed answer.
    func post(_ operation: String, _ body: JSONValue, database: String? = nil) async throws -> JSONValue {
        try await perform(method: "POST", url: endpoint.databaseURL(operation, database: database ?? self.database), body: body)
    }

    func perform(method: String, url: URL, body: JSONValue?, timeout: TimeInterval? = nil) async throws -> JSONValue {
        try Self.decode(try await send(method: method, url: url, body: body, timeout: timeout), url: url)
    }

    /// Sends one request and returns the answer unparsed.
    func send(method: String, url: URL, body: JSONValue?, timeout: TimeInterval? = nil) async throws -> HTTPResponse {
        var headers = authorizationHeaders
        if body != nil { headers["Content-Type"] = "application/json" }
        let request = HTTPRequest(method: method, url: url, headers: headers, body: body?.serialized(),
                                  timeout: timeout ?? requestTimeout)
        return try await transport.send(request)
    }

    /// Parses an answer; a non-2xx status becomes `.server` with the error dictionary it carries.
    static func decode(_ response: HTTPResponse, url: URL) throws -> JSONValue {
        let json = try? JSONValue.parse(response.body)
        guard (200..<300).contains(response.status) else {
            if let json, let error = ServerError(json: json) {
                throw RecordClientError.server(error, httpStatus: response.status)
            }
            let code = ServerErrorCode.allCases.first { $0.httpStatus == response.status } ?? .internalError
            throw RecordClientError.server(ServerError(code, "HTTP \(response.status) from \(url.path)"), httpStatus: response.status)
        }
        guard let json else { throw RecordClientError.invalidResponse("a body that is not JSON from \(url.path)") }
        return json
    }

    /// `users/current`: the caller's user record name.
    public func currentUserRecordName() async throws -> String {
        let url = endpoint.databaseURL("users/current")
        let json = try await perform(method: "GET", url: url, body: nil)
        guard let name = json["userRecordName"]?.stringValue else {
            throw RecordClientError.invalidResponse("users/current without a userRecordName")
        }
        return name
    }
}

extension JSONValue {
    /// The members of an object answer that must hold an array, or an invalid-response error.
    func requiredArray(_ key: String, in operation: String) throws -> [JSONValue] {
        guard let array = self[key]?.arrayValue else {
            throw RecordClientError.invalidResponse("\(operation) answer without '\(key)'")
        }
        return array
    }
}
