/// The error codes of the API, each with its HTTP status.
public enum ServerErrorCode: String, Sendable, CaseIterable {
    case badRequest = "BAD_REQUEST"
    case atomicError = "ATOMIC_ERROR"
    case authenticationFailed = "AUTHENTICATION_FAILED"
    case accessDenied = "ACCESS_DENIED"
    case notFound = "NOT_FOUND"
    case zoneNotFound = "ZONE_NOT_FOUND"
    case conflict = "CONFLICT"
    case exists = "EXISTS"
    case changeTokenExpired = "CHANGE_TOKEN_EXPIRED"
    case validatingReferenceError = "VALIDATING_REFERENCE_ERROR"
    case limitExceeded = "LIMIT_EXCEEDED"
    case authenticationRequired = "AUTHENTICATION_REQUIRED"
    case throttled = "THROTTLED"
    case internalError = "INTERNAL_ERROR"
    case tryAgainLater = "TRY_AGAIN_LATER"

    public var httpStatus: Int {
        switch self {
        case .badRequest, .atomicError: return 400
        case .authenticationFailed: return 401
        case .accessDenied: return 403
        case .notFound, .zoneNotFound: return 404
        case .conflict, .exists: return 409
        case .changeTokenExpired: return 410
        case .validatingReferenceError: return 412
        case .limitExceeded: return 413
        case .authenticationRequired: return 421
        case .throttled: return 429
        case .internalError: return 500
        case .tryAgainLater: return 503
        }
    }
}

/// An error as the API reports it: a code, a reason a person can read, and for per-item errors
/// the item it concerns. Every failure the daemon can report is one of these; one renderer turns
/// it into the contract's JSON (`json`) and status (`code.httpStatus`).
public struct ServerError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ServerErrorCode
    public var reason: String
    public var retryAfter: Int?
    public var recordName: String?
    public var subscriptionID: String?
    public var zoneID: ZoneID?
    /// For `CONFLICT` (extension): the current server copy, so the client can merge at once.
    public var serverRecord: JSONValue?

    public init(_ code: ServerErrorCode, _ reason: String, retryAfter: Int? = nil) {
        self.code = code
        self.reason = reason
        self.retryAfter = retryAfter
    }

    public var description: String { "\(code.rawValue): \(reason)" }

    public func with(recordName: String?) -> ServerError {
        var copy = self
        copy.recordName = recordName
        return copy
    }

    /// The error dictionary; `uuid` is added for whole-request errors.
    public func json(uuid: String? = nil) -> JSONValue {
        var members: [String: JSONValue] = ["serverErrorCode": .string(code.rawValue), "reason": .string(reason)]
        if let uuid { members["uuid"] = .string(uuid) }
        if let retryAfter { members["retryAfter"] = .int(Int64(retryAfter)) }
        if let recordName { members["recordName"] = .string(recordName) }
        if let subscriptionID { members["subscriptionID"] = .string(subscriptionID) }
        if let zoneID { members["zoneID"] = zoneID.json }
        if let serverRecord { members["serverRecord"] = serverRecord }
        return .object(members)
    }

    /// Reads an error dictionary (client side); nil if `json` is not one.
    public init?(json: JSONValue) {
        guard let codeName = json["serverErrorCode"]?.stringValue else { return nil }
        self.code = ServerErrorCode(rawValue: codeName) ?? .internalError
        self.reason = json["reason"]?.stringValue ?? codeName
        self.retryAfter = json["retryAfter"]?.int64Value.map { Int($0) }
        self.recordName = json["recordName"]?.stringValue
        self.subscriptionID = json["subscriptionID"]?.stringValue
        self.zoneID = json["zoneID"].flatMap { try? ZoneID(json: $0) }
        self.serverRecord = json["serverRecord"]
    }

    public static func badRequest(_ reason: String) -> ServerError { ServerError(.badRequest, reason) }
}
