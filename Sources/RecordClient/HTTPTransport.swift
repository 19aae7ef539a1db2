import Foundation

/// One HTTP exchange, as plain values so a transport can be replaced in tests.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var body: [UInt8]?
    /// Seconds to wait for the whole answer.
    public var timeout: TimeInterval

    public init(method: String, url: URL, headers: [String: String] = [:], body: [UInt8]? = nil, timeout: TimeInterval = 30) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

/// Sends requests. `SocketTransport` is the real one; tests supply canned answers.
/// A transport throws `RecordClientError.unreachable` when no answer came back at all.
public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
}
