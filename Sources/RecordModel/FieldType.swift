/// The type of a record field, as CloudKit Web Services names it on the wire (`STRING`, `INT64_LIST`, …).
public indirect enum FieldType: Hashable, Sendable, CustomStringConvertible {
    case string, int64, double, timestamp, bytes, reference, location, asset
    case list(FieldType)

    /// The wire name of every scalar type; a list is the element's name plus `_LIST`.
    static let scalarNames: [(FieldType, String)] = [
        (.string, "STRING"), (.int64, "INT64"), (.double, "DOUBLE"), (.timestamp, "TIMESTAMP"),
        (.bytes, "BYTES"), (.reference, "REFERENCE"), (.location, "LOCATION"), (.asset, "ASSETID"),
    ]

    /// Parses a wire type name such as `STRING` or `REFERENCE_LIST`; nil for anything else.
    public init?(wireName: String) {
        if wireName.hasSuffix("_LIST") {
            guard let element = FieldType(wireName: String(wireName.dropLast(5))), !element.isList else { return nil }
            self = .list(element)
            return
        }
        guard let match = FieldType.scalarNames.first(where: { $0.1 == wireName }) else { return nil }
        self = match.0
    }

    public var wireName: String {
        switch self {
        case .string: return "STRING"
        case .int64: return "INT64"
        case .double: return "DOUBLE"
        case .timestamp: return "TIMESTAMP"
        case .bytes: return "BYTES"
        case .reference: return "REFERENCE"
        case .location: return "LOCATION"
        case .asset: return "ASSETID"
        case .list(let element): return element.wireName + "_LIST"
        }
    }

    /// `wireName`'s bytes, without building a string (every field of every record written).
    public func appendWireName(to out: inout [UInt8]) {
        switch self {
        case .string: out.appendLiteral("STRING")
        case .int64: out.appendLiteral("INT64")
        case .double: out.appendLiteral("DOUBLE")
        case .timestamp: out.appendLiteral("TIMESTAMP")
        case .bytes: out.appendLiteral("BYTES")
        case .reference: out.appendLiteral("REFERENCE")
        case .location: out.appendLiteral("LOCATION")
        case .asset: out.appendLiteral("ASSETID")
        case .list(let element):
            element.appendWireName(to: &out)
            out.appendLiteral("_LIST")
        }
    }

    public var description: String { wireName }

    public var isList: Bool {
        if case .list = self { return true }
        return false
    }
}
