import RecordModel
import SQLiteDB

/// A value a filter or sort compares: numbers numerically, everything else as text
/// (a reference by its record name).
enum ComparableValue: Comparable {
    case number(Double)
    case text(String)

    init?(_ json: JSONValue) {
        switch json {
        case .int(let i): self = .number(Double(i))
        case .double(let d): self = .number(d)
        case .bool(let b): self = .number(b ? 1 : 0)
        case .string(let s): self = .text(s)
        case .object:
            guard let name = json["recordName"]?.stringValue else { return nil }
            self = .text(name)
        default: return nil
        }
    }

    static func < (lhs: ComparableValue, rhs: ComparableValue) -> Bool {
        switch (lhs, rhs) {
        case (.number(let a), .number(let b)): return a < b
        case (.text(let a), .text(let b)): return a < b
        case (.number, .text): return true
        case (.text, .number): return false
        }
    }
}

extension RecordQuery {
    /// Reads the `query` member of a `records/query` request.
    public init(json: JSONValue) throws {
        guard case .object = json, let type = json["recordType"]?.stringValue else {
            throw ServerError.badRequest("query.recordType must be a string")
        }
        try Names.validateIdentifier(type, what: "recordType")
        self.recordType = type
        self.filters = try (json["filterBy"]?.arrayValue ?? []).map { filter in
            guard let name = filter["comparator"]?.stringValue, let comparator = QueryComparator(rawValue: name) else {
                throw ServerError.badRequest("unknown comparator \(filter["comparator"]?.serializedString() ?? "(none)")")
            }
            guard let value = filter["fieldValue"]?["value"] else { throw ServerError.badRequest("a filter needs fieldValue.value") }
            switch comparator {
            case .in, .notIn:
                guard case .array = value else { throw ServerError.badRequest("\(name) needs a list value") }
            case .beginsWith:
                guard case .string = value else { throw ServerError.badRequest("BEGINS_WITH needs a string value") }
            default:
                guard ComparableValue(value) != nil else { throw ServerError.badRequest("\(name) needs a string, number or reference value") }
            }
            return QueryFilter(comparator: comparator, field: try QueryField(json: filter), value: value)
        }
        self.sorts = try (json["sortBy"]?.arrayValue ?? []).map { sort in
            QuerySort(field: try QueryField(json: sort), ascending: sort["ascending"]?.boolValue ?? true)
        }
        guard filters.count <= 32, sorts.count <= 8 else { throw ServerError.badRequest("too many filters or sorts") }
    }
}

extension QueryField {
    init(json: JSONValue) throws {
        if let system = json["systemFieldName"]?.stringValue {
            switch system {
            case "recordName": self = .recordName
            case "createdTimestamp": self = .createdTimestamp
            case "modifiedTimestamp": self = .modifiedTimestamp
            default: throw ServerError.badRequest("unknown systemFieldName '\(system)'")
            }
            return
        }
        guard let name = json["fieldName"]?.stringValue else { throw ServerError.badRequest("a filter or sort needs fieldName or systemFieldName") }
        try Names.validateIdentifier(name, what: "fieldName")
        self = .field(name)
    }
}

extension SQLiteRecordStore {
    public static let maximumQueryResults = 200

    /// Filters and sorts in memory over the zone's records of the type (indexed by type). The
    /// continuation marker is the offset into the sorted result, tied to the zone's sequence so a
    /// marker from another zone is rejected.
    public func queryRecords(_ scope: DatabaseScope, zone: ZoneID, query: RecordQuery, resultsLimit: Int,
                             continuationMarker: String?) throws -> QueryPage
    {
        let limit = SQLiteRecordStore.clampLimit(resultsLimit, maximum: SQLiteRecordStore.maximumQueryResults)
        return try database.readSync { connection in
            try connection.readTransaction {
                let zoneRow = try requireZone(try databaseID(scope), zone, connection)
                var offset = 0
                if let continuationMarker {
                    let parts = OpaqueToken.decode(continuationMarker)?.split(separator: "|") ?? []
                    guard parts.count == 3, parts[0] == "q1", Int64(parts[1]) == zoneRow.id, let start = Int(parts[2]), start >= 0 else {
                        throw ServerError.badRequest("continuationMarker is not valid for this zone")
                    }
                    offset = start
                }
                let zoneID = zoneID(zoneRow.name, scope)
                let candidates = try liveRecords(zoneRow.id, type: query.recordType, zoneID: zoneID, connection)
                var rows: [(record: StoredRecord, fields: [String: JSONValue])] = []
                for record in candidates {
                    let fields = (try? JSONValue.parse(record.fieldsJSON).objectValue) ?? [:]
                    let values = fields.mapValues { $0["value"] ?? .null }
                    if try query.filters.allSatisfy({ try SQLiteRecordStore.matches($0, record: record, values: values) }) {
                        rows.append((record, values))
                    }
                }
                rows.sort { a, b in
                    for sort in query.sorts {
                        let left = SQLiteRecordStore.value(sort.field, record: a.record, values: a.fields).flatMap(ComparableValue.init)
                        let right = SQLiteRecordStore.value(sort.field, record: b.record, values: b.fields).flatMap(ComparableValue.init)
                        if left == right { continue }
                        guard let left else { return !sort.ascending }
                        guard let right else { return sort.ascending }
                        return sort.ascending ? left < right : right < left
                    }
                    return a.record.recordName < b.record.recordName
                }
                let page = rows.dropFirst(offset).prefix(limit).map(\.record)
                let next = offset + page.count
                let marker = next < rows.count ? OpaqueToken.encode("q1|\(zoneRow.id)|\(next)") : nil
                return QueryPage(records: Array(page), continuationMarker: marker)
            }
        }
    }

    static func value(_ field: QueryField, record: StoredRecord, values: [String: JSONValue]) -> JSONValue? {
        switch field {
        case .field(let name): return values[name]
        case .recordName: return .string(record.recordName)
        case .createdTimestamp: return .int(record.created.timestamp)
        case .modifiedTimestamp: return .int(record.modified.timestamp)
        }
    }

    static func matches(_ filter: QueryFilter, record: StoredRecord, values: [String: JSONValue]) throws -> Bool {
        let actual = value(filter.field, record: record, values: values)
        let expected = ComparableValue(filter.value)
        func compare(_ test: (ComparableValue, ComparableValue) -> Bool) -> Bool {
            guard let actual, let left = ComparableValue(actual), let expected else { return false }
            return test(left, expected)
        }
        switch filter.comparator {
        case .equals: return compare(==)
        case .notEquals: return !compare(==)
        case .lessThan: return compare(<)
        case .lessThanOrEquals: return compare(<=)
        case .greaterThan: return compare(>)
        case .greaterThanOrEquals: return compare(>=)
        case .in, .notIn:
            guard let options = filter.value.arrayValue else { throw ServerError.badRequest("\(filter.comparator.rawValue) needs a list value") }
            let left = actual.flatMap(ComparableValue.init)
            let found = left != nil && options.contains { ComparableValue($0) == left }
            return filter.comparator == .in ? found : !found
        case .beginsWith:
            guard case .string(let prefix) = filter.value else { throw ServerError.badRequest("BEGINS_WITH needs a string value") }
            return actual?.stringValue?.hasPrefix(prefix) ?? false
        case .listContains:
            guard let list = actual?.arrayValue, let expected else { return false }
            return list.contains { ComparableValue($0) == expected }
        }
    }
}
