import Foundation

/// One HTTP exchange, as plain values so a transport can be replaced in tests.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var body: [UInt8]?
    /// A body streamed from a file instead (an asset upload: 50 MB are never held in memory).
    public var bodyFile: HTTPBodyFile?
    /// Seconds to wait for the whole answer.
    public var timeout: TimeInterval

    public init(method: String, url: URL, headers: [String: String] = [:], body: [UInt8]? = nil, timeout: TimeInterval = 30,
                bodyFile: HTTPBodyFile? = nil)
    {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.bodyFile = bodyFile
        self.timeout = timeout
    }
}

/// A request body read from a file as it is sent: `size` bytes (its Content-Length) from `path`.
public struct HTTPBodyFile: Sendable, Equatable {
    public var path: String
    public var size: Int64
    /// Told the bytes sent so far after each piece (from the transport's thread).
    public var progress: (@Sendable (Int64) -> Void)?

    public init(path: String, size: Int64, progress: (@Sendable (Int64) -> Void)? = nil) {
        self.path = path
        self.size = size
        self.progress = progress
    }

    public static func == (left: HTTPBodyFile, right: HTTPBodyFile) -> Bool { left.path == right.path && left.size == right.size }

    /// Reads the file in pieces of `pieceBytes`, handing each to `write`; throws when the file
    /// cannot be read or holds other than `size` bytes (a short body must not be sent as whole).
    func forEachPiece(pieceBytes: Int = 1 << 20, _ write: ([UInt8]) throws -> Void) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw RecordClientError.unreachable("cannot read \(path) to send it")
        }
        defer { try? handle.close() }
        var sent: Int64 = 0
        while sent < size {
            guard let data = try handle.read(upToCount: Int(min(Int64(pieceBytes), size - sent))), !data.isEmpty else { break }
            try write(Array(data))
            sent += Int64(data.count)
            progress?(sent)
        }
        guard sent == size else { throw RecordClientError.unreachable("\(path) changed while it was being sent") }
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
