import Foundation

/// A typed field value. `value` holds the normalized wire JSON for `type` (an `.int` for INT64 and
/// TIMESTAMP, a `.double` for DOUBLE, a base64 `.string` for BYTES, a reference or location object,
/// an array for lists), so a value read from the wire and written back is unchanged.
public struct FieldValue: Equatable, Sendable {
    public var type: FieldType
    public var value: JSONValue

    init(type: FieldType, normalized value: JSONValue) {
        self.type = type
        self.value = value
    }

    public static func string(_ s: String) -> FieldValue { FieldValue(type: .string, normalized: .string(s)) }
    public static func int64(_ i: Int64) -> FieldValue { FieldValue(type: .int64, normalized: .int(i)) }
    public static func double(_ d: Double) -> FieldValue { FieldValue(type: .double, normalized: .double(d)) }
    public static func timestamp(milliseconds: Int64) -> FieldValue { FieldValue(type: .timestamp, normalized: .int(milliseconds)) }
    public static func date(_ date: Date) -> FieldValue {
        .timestamp(milliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded()))
    }
    public static func bytes(_ bytes: [UInt8]) -> FieldValue {
        FieldValue(type: .bytes, normalized: .string(Data(bytes).base64EncodedString()))
    }
    public static func reference(_ reference: Reference) -> FieldValue { FieldValue(type: .reference, normalized: reference.json) }
    public static func location(_ location: Location) -> FieldValue { FieldValue(type: .location, normalized: location.json) }
    /// An asset: `{"fileChecksum", "size"}`, or an upload's `singleFile` with its receipt.
    public static func asset(_ dictionary: JSONValue) -> FieldValue { FieldValue(type: .asset, normalized: dictionary) }
    public static func stringList(_ list: [String]) -> FieldValue {
        FieldValue(type: .list(.string), normalized: .array(list.map { .string($0) }))
    }
    public static func int64List(_ list: [Int64]) -> FieldValue {
        FieldValue(type: .list(.int64), normalized: .array(list.map { .int($0) }))
    }
    public static func referenceList(_ list: [Reference]) -> FieldValue {
        FieldValue(type: .list(.reference), normalized: .array(list.map(\.json)))
    }

    public var stringValue: String? { type == .string ? value.stringValue : nil }
    public var int64Value: Int64? { type == .int64 || type == .timestamp ? value.int64Value : nil }
    public var doubleValue: Double? { type == .double || type == .int64 ? value.doubleValue : nil }
    public var dateValue: Date? {
        guard type == .timestamp, let ms = value.int64Value else { return nil }
        return Date(timeIntervalSince1970: Double(ms) / 1000)
    }
    public var referenceValue: Reference? { type == .reference ? try? Reference(json: value) : nil }
    public var locationValue: Location? { type == .location ? try? Location(json: value) : nil }
    public var bytesValue: [UInt8]? {
        guard type == .bytes, let s = value.stringValue, let data = Data(base64Encoded: s) else { return nil }
        return [UInt8](data)
    }

    /// Every reference this value holds (one for REFERENCE, each element for REFERENCE_LIST).
    public var references: [Reference] {
        switch type {
        case .reference: return referenceValue.map { [$0] } ?? []
        case .list(.reference): return (value.arrayValue ?? []).compactMap { try? Reference(json: $0) }
        default: return []
        }
    }

    /// The wire form `{"value": …, "type": …}`.
    public var json: JSONValue { ["value": value, "type": .string(type.wireName)] }

    /// Reads a wire field `{"value": …, "type"?: …}`. Without `type`, `schemaType` decides, else
    /// the type is inferred from the JSON.
    public init(json: JSONValue, fieldName: String, schemaType: FieldType?) throws {
        guard case .object = json else { throw ServerError.badRequest("field '\(fieldName)' must be an object with a 'value'") }
        try self.init(value: json["value"], typeJSON: json["type"], fieldName: fieldName, schemaType: schemaType)
    }

    /// The same from a wire field's `value` and `type` members (nil: absent).
    init(value: JSONValue?, typeJSON: JSONValue?, fieldName: String, schemaType: FieldType?) throws {
        guard let rawValue = value else {
            throw ServerError.badRequest("field '\(fieldName)' must be an object with a 'value'")
        }
        var type: FieldType
        if let typeJSON, !typeJSON.isNull {
            guard let name = typeJSON.stringValue, let parsed = FieldType(wireName: name) else {
                throw ServerError.badRequest("field '\(fieldName)' has an unknown type \(typeJSON.serializedString())")
            }
            type = parsed
        } else if let schemaType {
            type = schemaType
        } else {
            type = try FieldValue.inferType(of: rawValue, fieldName: fieldName)
        }
        // A schema INT64 field may be sent a whole double and vice versa; the declared type wins.
        self.type = type
        self.value = try FieldValue.normalize(rawValue, as: type, fieldName: fieldName)
    }

    static func inferType(of value: JSONValue, fieldName: String) throws -> FieldType {
        switch value {
        case .string: return .string
        case .int, .bool: return .int64
        case .double: return .double
        case .object(let members):
            if members["recordName"] != nil { return .reference }
            if members["latitude"] != nil, members["longitude"] != nil { return .location }
            if members["fileChecksum"] != nil || members["downloadURL"] != nil { return .asset }
            throw ServerError.badRequest("cannot infer the type of field '\(fieldName)'; give its 'type'")
        case .array(let elements):
            guard let first = elements.first else {
                throw ServerError.badRequest("cannot infer the type of the empty list '\(fieldName)'; give its 'type'")
            }
            let element = try inferType(of: first, fieldName: fieldName)
            guard !element.isList else { throw ServerError.badRequest("field '\(fieldName)': lists of lists are not allowed") }
            return .list(element)
        case .null, .raw:
            throw ServerError.badRequest("cannot infer the type of field '\(fieldName)'; give its 'type'")
        }
    }

    static func normalize(_ value: JSONValue, as type: FieldType, fieldName: String) throws -> JSONValue {
        func mismatch() -> ServerError {
            ServerError.badRequest("field '\(fieldName)' of type \(type.wireName) has an invalid value")
        }
        switch type {
        case .string:
            guard case .string = value else { throw mismatch() }
            return value
        case .int64, .timestamp:
            if case .bool(let b) = value, type == .int64 { return .int(b ? 1 : 0) }
            guard let i = value.int64Value else { throw mismatch() }
            return .int(i)
        case .double:
            guard let d = value.doubleValue else { throw mismatch() }
            return .double(d)
        case .bytes:
            guard let s = value.stringValue, Data(base64Encoded: s) != nil else { throw mismatch() }
            return value
        case .reference:
            return try Reference(json: value).json
        case .location:
            return try Location(json: value).json
        case .asset:
            guard case .object = value else { throw mismatch() }
            return value
        case .list(let element):
            guard let elements = value.arrayValue else { throw mismatch() }
            return .array(try elements.map { try normalize($0, as: element, fieldName: fieldName) })
        }
    }
}
