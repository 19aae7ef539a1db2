import Foundation
import RecordModel
import SyncEngine

/// The JSON export: one object with a format marker and an array per entity type, one record
/// per line, keys sorted, so the same book always gives the same bytes:
///
/// ```json
/// {"format": "scorebook-export", "version": 1,
/// "people": [
/// {"emailAddress":null,"firstName":"Ann","lastName":"Lee","modificationDate":"2026-…Z","recordName":"Person|~|…","recordType":"Person"}
/// ],
/// "games": […], "matches": […], "players": […], "scores": […], "matchLocations": […]}
/// ```
///
/// Records read like the entity JSON of `--json`; absent fields are null.
extension BookExport {
    static let formatMarker = "scorebook-export"
    static let version: Int64 = 1

    public var jsonText: String {
        var out = "{\"format\":\"\(Self.formatMarker)\",\"version\":\(Self.version)"
        for kind in ExportKind.all {
            let records = rows.filter { $0.recordType == kind.recordType }
            out += ",\n\"\(kind.section)\":["
            for (index, row) in records.enumerated() {
                out += (index == 0 ? "\n" : ",\n") + Self.render(Self.json(of: row, kind: kind))
            }
            out += records.isEmpty ? "]" : "\n]"
        }
        return out + "}\n"
    }

    /// Compact JSON with sorted keys, numbers as the wire format writes them (exactly: an export
    /// must read back bit for bit, whatever rounding the CLI's output applies for people).
    static func render(_ value: JSONValue) -> String {
        switch value {
        case .object(let members):
            return "{" + members.keys.sorted().map { JSONValue.string($0).serializedString() + ":" + render(members[$0]!) }
                .joined(separator: ",") + "}"
        case .array(let elements):
            return "[" + elements.map(render).joined(separator: ",") + "]"
        default:
            return value.serializedString()
        }
    }

    static func json(of row: ExportRow, kind: ExportKind) -> JSONValue {
        var members: [String: JSONValue] = [
            "recordName": .string(row.recordName), "recordType": .string(row.recordType),
            "modificationDate": .string(ISO8601.string(from: row.modificationDate)),
        ]
        for field in kind.fields { members[field.name] = row.values[field.name].map(json) ?? .null }
        return .object(members)
    }

    static func json(_ value: ExportValue) -> JSONValue {
        switch value {
        case .text(let text), .reference(let text): .string(text)
        case .integer(let number): .int(number)
        case .number(let number): .double(number)
        case .flag(let flag): .bool(flag)
        case .date(let date): .string(ISO8601.string(from: date))
        case .location(let latitude, let longitude): ["latitude": .double(latitude), "longitude": .double(longitude)]
        }
    }

    init(jsonText text: String) throws {
        let document: JSONValue
        do {
            document = try JSONValue.parse(text)
        } catch {
            throw ExportFileError("it is not valid JSON (\(error))")
        }
        guard document["format"]?.stringValue == Self.formatMarker else {
            throw ExportFileError("it is JSON but not a scorebook export (no \"format\": \"\(Self.formatMarker)\")")
        }
        guard let version = document["version"]?.int64Value, version == Self.version else {
            throw ExportFileError("it is a scorebook export of version \(document["version"]?.serializedString() ?? "none"); "
                + "this scorebook reads version \(Self.version)")
        }
        var rows: [ExportRow] = []
        for kind in ExportKind.all {
            guard let section = document[kind.section], !section.isNull else { continue }
            guard let records = section.arrayValue else { throw ExportFileError("\"\(kind.section)\" is not an array") }
            for (index, record) in records.enumerated() {
                let place = "\(kind.section)[\(index)]"
                guard case .object = record else { throw ExportFileError("\(place) is not an object") }
                guard let name = record["recordName"]?.stringValue else { throw ExportFileError("\(place) has no recordName") }
                let where_ = "\(place) (\(name))"
                if let type = record["recordType"], !type.isNull, type.stringValue != kind.recordType {
                    throw ExportFileError("\(where_) is in \"\(kind.section)\" but its recordType is \(type.serializedString())")
                }
                guard let dateText = record["modificationDate"]?.stringValue, let date = Self.date(dateText) else {
                    throw ExportFileError("\(where_): modificationDate must be an ISO-8601 date")
                }
                var values: [String: ExportValue] = [:]
                for field in kind.fields {
                    guard let json = record[field.name], !json.isNull else { continue }
                    guard let value = Self.value(json, kind: field.kind) else {
                        throw ExportFileError("\(where_): \(field.name) must be \(Self.describe(field.kind)), not \(json.serializedString().prefix(60))")
                    }
                    values[field.name] = value
                }
                rows.append(ExportRow(recordType: kind.recordType, recordName: name, modificationDate: date, values: values))
            }
        }
        self.init(rows: rows)
    }

    static func value(_ json: JSONValue, kind: ExportFieldKind) -> ExportValue? {
        switch kind {
        case .name, .text: json.stringValue.map(ExportValue.text)
        case .reference: json.stringValue.map(ExportValue.reference)
        case .integer: json.int64Value.map(ExportValue.integer)
        case .number: json.doubleValue.map(ExportValue.number)
        case .flag: json.boolValue.map(ExportValue.flag)
        case .date: json.stringValue.flatMap(date).map(ExportValue.date)
        case .location:
            if let latitude = json["latitude"]?.doubleValue, let longitude = json["longitude"]?.doubleValue {
                .location(latitude: latitude, longitude: longitude)
            } else {
                nil
            }
        }
    }

    /// An ISO-8601 date, to the millisecond as records keep it.
    static func date(_ text: String) -> Date? {
        ISO8601.date(from: text).map { Date(timeIntervalSince1970: ($0.timeIntervalSince1970 * 1000).rounded() / 1000) }
    }

    static func describe(_ kind: ExportFieldKind) -> String {
        switch kind {
        case .name, .text: "a string"
        case .reference(let type): "a \(type)'s record name"
        case .integer: "an integer"
        case .number: "a number"
        case .flag: "true or false"
        case .date: "an ISO-8601 date"
        case .location: "{\"latitude\", \"longitude\"}"
        }
    }
}
