/// A value bound to or read from a statement of the store's database, whichever the backend:
/// the engine's scripts, the drivers and the migrations speak it.
package enum SQLValue: Equatable, Sendable {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    package init(stringLiteral value: String) { self = .text(value) }
    package init(integerLiteral value: Int64) { self = .int(value) }
    package init(nilLiteral: ()) { self = .null }
}

extension Optional where Wrapped == String {
    package var sqlValue: SQLValue { map { .text($0) } ?? .null }
}

extension Optional where Wrapped == Int64 {
    package var sqlValue: SQLValue { map { .int($0) } ?? .null }
}
