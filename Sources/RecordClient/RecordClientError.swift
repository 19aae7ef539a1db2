import RecordModel

/// Why a call to the server failed.
public enum RecordClientError: Error, Equatable, CustomStringConvertible {
    /// The server answered with an error dictionary (a whole-request error, or a per-zone one).
    case server(ServerError, httpStatus: Int)
    /// No answer at all: connection refused, timed out, host unknown.
    case unreachable(String)
    /// An answer that is not what the contract promises.
    case invalidResponse(String)

    public var description: String {
        switch self {
        case .server(let error, _): return error.description
        case .unreachable(let reason): return reason
        case .invalidResponse(let reason): return "unexpected answer from the server: \(reason)"
        }
    }

    /// The server's error code, when the server answered with one.
    public var serverErrorCode: ServerErrorCode? {
        if case .server(let error, _) = self { return error.code }
        return nil
    }

    /// The seconds the server asked us to wait before retrying, if any.
    public var retryAfter: Int? {
        if case .server(let error, _) = self { return error.retryAfter }
        return nil
    }
}
