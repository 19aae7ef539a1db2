/// A value bound to or read from an SQL statement.
public enum SQLValue: Equatable, Sendable {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(nilLiteral: ()) { self = .null }
}

extension Optional where Wrapped == String {
    public var sqlValue: SQLValue { map { .text($0) } ?? .null }
}

extension Optional where Wrapped == Int64 {
    public var sqlValue: SQLValue { map { .int($0) } ?? .null }
}
