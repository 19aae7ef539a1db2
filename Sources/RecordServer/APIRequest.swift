import Foundation
import RecordModel
import Synchronization

/// An HTTP request as the API sees it, independent of the HTTP server that received it, so the
/// whole API can be driven in-process by tests.
package struct APIRequest: Sendable {
    package enum Method: String, Sendable { case get = "GET", post = "POST", other }

    package var method: Method
    /// The path without the query string, e.g. `/database/1/iCloud.x/development/private/records/modify`.
    package var path: String
    /// Decoded query parameters.
    package var query: [String: String]
    package var authorization: String?
    package var deviceID: String?
    /// The Host header, for absolute URLs in answers.
    package var host: String?
    /// `X-Forwarded-Proto` from a trusted TLS-terminating proxy: answers' absolute URLs use `https` when it says so.
    package var forwardedProto: String?
    /// The client's address, for the request log (`RequestOrigin`).
    package var clientAddress: String?
    /// `Accept`, to tell an event-stream request from a long-poll.
    package var accept: String?
    /// `Origin`: the web page a browser sends the request for (sign-in's redirect URL).
    package var origin: String?
    /// `X-Apple-CloudKit-Web-Auth-Token`: the web-auth token sent as a header instead of in the query.
    package var webAuthTokenHeader: String?
    /// `Last-Event-ID`, where a reconnecting event stream resumes.
    package var lastEventID: String?
    /// A server-to-server request's `X-Apple-CloudKit-Request-KeyID`, `-ISO8601Date` and `-SignatureV1`.
    package var serverKeyID: String?
    package var signatureDate: String?
    package var signature: String?
    package var body: [UInt8]
    /// The request's own id: the `uuid` of its error answers and the `request` of its log line.
    package var requestID: String
    /// A `records/modify` body read into drafts while the caller's token was checked (`RecordAPI.answer`).
    package var parsedModifyBody: ParsedModifyBody?

    package init(method: Method, path: String, query: [String: String] = [:], authorization: String? = nil,
                deviceID: String? = nil, body: [UInt8] = [], requestID: String = UUID().uuidString.lowercased())
    {
        self.requestID = requestID
        self.method = method
        self.path = path
        self.query = query
        self.authorization = authorization
        self.deviceID = deviceID
        self.body = body
    }

    /// Splits a raw query string (`a=1&b=x%20y`) into decoded parameters; `+` is a space. A value
    /// that does not decode is kept as sent: it is not an empty one (an empty `ckSession` counts
    /// as none, a malformed one is a wrong token).
    package static func parseQuery(_ raw: String) -> [String: String] {
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

/// A JSON answer (a status and a body), or a Server-Sent Events stream.
package struct APIResponse: Sendable {
    package var status: Int
    package var body: [UInt8]
    package var contentType = "application/json"
    /// Extra response headers (name, value).
    package var headers: [(String, String)] = []
    /// Set for answers the push hub writes (event streams, parked long-polls).
    package var parking: PushParking?

    /// Where an answer hands a caller that authenticated with `ckWebAuthToken` the token to use next.
    static let webAuthTokenHeader = "X-Apple-CloudKit-Web-Auth-Token"

    package init(status: Int, json: JSONValue) {
        self.status = status
        self.body = json.serialized()
    }

    package init(status: Int, text: String, contentType: String) {
        self.status = status
        self.body = Array(text.utf8)
        self.contentType = contentType
    }

    package init(parking: PushParking) {
        self.status = 200
        self.body = []
        self.parking = parking
        if case .eventStream = parking.kind { contentType = "text/event-stream" }
    }
}

/// A body parsed ahead, taken once by the operation that reads it: held in a box, not in the
/// request's value, so the taker owns the drafts alone. (Left in the request, they stayed
/// shared: moving each draft out copied the whole batch, and the request freed them all at the end.)
package final class ParsedModifyBody: Sendable {
    private let parsed: Mutex<Result<ModifyRequestBody?, any Error>?>

    package init(_ parsed: consuming Result<ModifyRequestBody?, any Error>) { self.parsed = Mutex(parsed) }

    /// The parse's outcome; nil after the first call.
    package func take() -> Result<ModifyRequestBody?, any Error>? { parsed.withLock { $0.take() } }
}
