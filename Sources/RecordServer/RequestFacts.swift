import Foundation
import HTTPTypes
import Hummingbird
import RecordModel
import Synchronization

/// What the API's handlers read of a request besides its body: its credentials, the headers the
/// operations look at, the decoded query and where the client reached the daemon. Parsed once,
/// by the request-log middleware, and carried in the request's context
/// (`ConnectionRequestContext.facts`), so no handler parses a header or the query again.
struct RequestFacts: Sendable {
    var method: HTTPRequest.Method
    /// The path without the query string, e.g. `/database/1/iCloud.x/development/private/records/modify`.
    var path: String
    /// Decoded query parameters.
    var query: [String: String]
    var authorization: String?
    var deviceID: String?
    /// The Host header (or a trusted proxy's `X-Forwarded-Host`), for absolute URLs in answers.
    var host: String?
    /// `X-Forwarded-Proto` from a trusted TLS-terminating proxy: answers' absolute URLs use `https` when it says so.
    var forwardedProto: String?
    /// The client's address, for the request log (`RequestOrigin`).
    var clientAddress: String?
    /// `Accept`, to tell an event-stream request from a long-poll.
    var accept: String?
    /// `Origin`: the web page a browser sends the request for (sign-in's redirect URL).
    var origin: String?
    /// `X-Apple-CloudKit-Web-Auth-Token`: the web-auth token sent as a header instead of in the query.
    var webAuthTokenHeader: String?
    /// `Last-Event-ID`, where a reconnecting event stream resumes.
    var lastEventID: String?
    /// A server-to-server request's `X-Apple-CloudKit-Request-KeyID`, `-ISO8601Date` and `-SignatureV1`.
    var serverKeyID: String?
    var signatureDate: String?
    var signature: String?

    init(method: HTTPRequest.Method = .get, path: String = "/", query: [String: String] = [:], authorization: String? = nil,
         deviceID: String? = nil) {
        self.method = method
        self.path = path
        self.query = query
        self.authorization = authorization
        self.deviceID = deviceID
    }

    /// The facts of `request`, from a peer at `peer` (whose forwarded headers count when it is a trusted proxy).
    init(_ request: Request, peer: String?, trustedProxies: [AddressRange]) {
        let headers = request.headers
        // Most requests have no query string: nothing to decode.
        let query = request.uri.query.map(RequestFacts.parseQuery) ?? [:]
        self.init(method: request.method, path: request.uri.path, query: query, authorization: headers[.authorization],
                  deviceID: headers[RequestFacts.deviceIDHeader])
        let origin = RequestOrigin(peer: peer, headers: headers, trustedProxies: trustedProxies)
        host = origin.host ?? request.head.authority
        forwardedProto = origin.scheme
        clientAddress = origin.clientAddress
        accept = headers[.accept]
        self.origin = headers[.origin]
        lastEventID = headers[RequestFacts.lastEventIDHeader]
        webAuthTokenHeader = headers[RequestFacts.webAuthTokenHeader]
        serverKeyID = headers[RequestFacts.serverKeyIDHeader]
        signatureDate = headers[RequestFacts.signatureDateHeader]
        signature = headers[RequestFacts.signatureHeader]
    }

    static let deviceIDHeader = HTTPField.Name("X-Device-ID")!
    static let lastEventIDHeader = HTTPField.Name("Last-Event-ID")!
    static let webAuthTokenHeader = HTTPField.Name(APIResponse.webAuthTokenHeader)!
    static let serverKeyIDHeader = HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!
    static let signatureDateHeader = HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!
    static let signatureHeader = HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!

    /// Splits a raw query string (`a=1&b=x%20y`) into decoded parameters; `+` is a space. A value
    /// that does not decode is kept as sent: it is not an empty one (an empty `ckSession` counts
    /// as none, a malformed one is a wrong token).
    static func parseQuery(_ raw: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in raw.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = percentDecode(String(parts[0])) else { continue }
            result[key] = parts.count > 1 ? percentDecode(String(parts[1])) ?? String(parts[1]) : ""
        }
        return result
    }

    static func percentDecode(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// A courier answer the HTTP server hands to the push hub after the response head: the
/// connection is parked as an event stream, or as a long-poll answered once.
package struct PushParking: Sendable {
    package enum Kind: Sendable {
        case eventStream
        /// `emptyAnswer` is written if nothing comes within `timeoutSeconds`.
        case longPoll(timeoutSeconds: Int, emptyAnswer: [UInt8])
    }

    package var databaseID: Int64
    /// The client has seen every notification up to this one.
    package var cursor: Int64
    package var kind: Kind
}

/// A whole answer made by a handler (a status, a body and its type, extra headers: a page, a
/// JSON answer), or a courier answer the push hub writes (`parking`); its route turns it into
/// the `Response` (`Response(_:)`, `Response(parked:…)`).
struct APIResponse: Sendable {
    var status: Int
    var body: [UInt8]
    var contentType = "application/json"
    /// Extra response headers (name, value).
    var headers: [(String, String)] = []
    /// Set for answers the push hub writes (event streams, parked long-polls).
    var parking: PushParking?

    /// Where an answer hands a caller that authenticated with `ckWebAuthToken` the token to use next.
    static let webAuthTokenHeader = "X-Apple-CloudKit-Web-Auth-Token"

    init(status: Int, json: JSONValue) {
        self.status = status
        self.body = json.serialized()
    }

    init(status: Int, text: String, contentType: String) {
        self.status = status
        self.body = Array(text.utf8)
        self.contentType = contentType
    }

    init(parking: PushParking) {
        self.status = 200
        self.body = []
        self.parking = parking
        if case .eventStream = parking.kind { contentType = "text/event-stream" }
    }
}

/// A `records/modify` body read into drafts while the caller's token was checked (the user
/// authentication middleware), taken once by the operation that reads it: held in a box, not in
/// the context's value, so the taker owns the drafts alone. (Left in a shared value, they stayed
/// shared: moving each draft out copied the whole batch, and the value freed them all at the end.)
final class ParsedModifyBody: Sendable {
    private let parsed: Mutex<Result<ModifyRequestBody?, any Error>?>

    init(_ parsed: consuming Result<ModifyRequestBody?, any Error>) { self.parsed = Mutex(parsed) }

    /// The parse's outcome; nil after the first call.
    func take() -> Result<ModifyRequestBody?, any Error>? { parsed.withLock { $0.take() } }
}
