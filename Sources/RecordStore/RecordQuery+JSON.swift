import RecordModel

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
    package init(json: JSONValue) throws {
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
