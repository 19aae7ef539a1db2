/// A record dictionary as a client sent it, read member by member: the members a record is made
/// of as sent, its fields in order, and no dictionary tree. `records/modify` reads 400 of them a
/// request, and the tree (six dictionaries a record with its operation) cost more to build and
/// free than the checks made on the record. `Record(draft:schemaType:)` checks it.
public struct RecordDraft: Equatable, Sendable {
    /// The `fields` member: absent, a value that is not an object (refused when checked), or the
    /// fields of an object in the order sent.
    public enum Fields: Equatable, Sendable {
        case absent
        case notAnObject(JSONValue)
        case list([Field])
    }

    /// One member of `fields`: its `value` and `type` when it is an object, else the whole value
    /// in `notAnObject` (null removes the field; a share takes a bare string).
    public struct Field: Equatable, Sendable {
        public var name: String
        public var value: JSONValue?
        public var type: JSONValue?
        public var notAnObject: JSONValue?

        public init(name: String, json: JSONValue) {
            self.name = name
            guard case .object(let parts) = json else {
                notAnObject = json
                return
            }
            for (key, part) in parts {
                if key == "value" { value = part } else if key == "type" { type = part }
            }
        }

        init(name: String) { self.name = name }

        public var json: JSONValue {
            if let notAnObject { return notAnObject }
            var parts: [String: JSONValue] = [:]
            if let value { parts["value"] = value }
            if let type { parts["type"] = type }
            return .object(parts)
        }
    }

    /// False when the record itself was not an object (refused when checked).
    public var isObject = true
    public var recordName: JSONValue?
    public var recordType: JSONValue?
    public var recordChangeTag: JSONValue?
    public var parent: JSONValue?
    public var zoneID: JSONValue?
    public var fields = Fields.absent
    /// Members a record is not made of (a share's `participants`, `publicPermission`, …).
    public var otherMembers: [String: JSONValue] = [:]

    public init() {}

    /// The draft of a record dictionary already parsed.
    public init(json: JSONValue) {
        guard case .object(let members) = json else {
            isObject = false
            return
        }
        for (key, value) in members { set(key, value) }
    }

    private mutating func set(_ key: String, _ value: JSONValue) {
        switch key {
        case "recordName": recordName = value
        case "recordType": recordType = value
        case "recordChangeTag": recordChangeTag = value
        case "parent": parent = value
        case "zoneID": zoneID = value
        case "fields":
            guard case .object(let members) = value else {
                fields = .notAnObject(value)
                return
            }
            fields = .list(members.map { Field(name: $0.key, json: $0.value) })
        default: otherMembers[key] = value
        }
    }

    /// The record dictionary again (for the rare readers of a whole record: shares, assets).
    public var json: JSONValue {
        guard isObject else { return .null }
        var members = otherMembers
        if let recordName { members["recordName"] = recordName }
        if let recordType { members["recordType"] = recordType }
        if let recordChangeTag { members["recordChangeTag"] = recordChangeTag }
        if let parent { members["parent"] = parent }
        if let zoneID { members["zoneID"] = zoneID }
        switch fields {
        case .absent: break
        case .notAnObject(let value): members["fields"] = value
        case .list(let list):
            var object: [String: JSONValue] = [:]
            for field in list { object[field.name] = field.json }
            members["fields"] = .object(object)
        }
        return .object(members)
    }

    /// Reads a record at the parser (any value: one that is not an object gives a draft that
    /// is refused when checked). A repeated key keeps its last value, as in a parsed dictionary.
    static func read(_ parser: inout JSONParser) throws -> RecordDraft {
        var draft = RecordDraft()
        guard parser.peek() == UInt8(ascii: "{") else {
            _ = try parser.parseValue()
            draft.isObject = false
            return draft
        }
        try parser.readObject { parser, key in
            guard key == "fields", parser.peek() == UInt8(ascii: "{") else {
                draft.set(key, try parser.parseValue())
                return
            }
            var list: [Field] = []
            // A repeated name keeps its last value, in the first one's place: found by a scan
            // among a few fields, through an index among many (a body of many repeats stays linear).
            var positions: [String: Int]?
            try parser.readObject { parser, name in
                var field = Field(name: name)
                if parser.peek() == UInt8(ascii: "{") {
                    try parser.readObject { parser, part in
                        switch part {
                        case "value": field.value = try parser.parseValue()
                        case "type": field.type = try parser.parseValue()
                        default: _ = try parser.parseValue()
                        }
                    }
                } else {
                    field.notAnObject = try parser.parseValue()
                }
                let earlier: Int?
                if list.count < 16 {
                    earlier = list.firstIndex { $0.name == name }
                } else {
                    if positions == nil { positions = Dictionary(list.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { $1 }) }
                    earlier = positions![name]
                    if earlier == nil { positions![name] = list.count }
                }
                if let earlier { list[earlier] = field } else { list.append(field) }
            }
            draft.fields = .list(list)
        }
        return draft
    }
}

/// A `records/modify` body read straight from its bytes: each operation's record a
/// `RecordDraft`, every other member an ordinary `JSONValue`.
public struct ModifyRequestBody: Sendable {
    public struct Operation: Sendable {
        public var operationType: JSONValue?
        public var desiredKeys: JSONValue?
        public var record: RecordDraft?
    }

    /// The body's members other than `operations` (when `operations` is an array).
    public var members: [String: JSONValue] = [:]
    /// Nil when `operations` is absent or not an array (then it is in `members`).
    public var operations: [Operation]?

    /// Parses a body; blank is `{}`, as for every operation. Nil for a body that is JSON but not
    /// an object; `JSONParseError` for one that is not JSON.
    public static func parse(_ bytes: [UInt8]) throws -> ModifyRequestBody? {
        if JSONValue.isBlank(bytes) { return ModifyRequestBody() }
        return try bytes.withUnsafeBufferPointer { buffer -> ModifyRequestBody? in
            var parser = JSONParser(bytes: buffer)
            guard parser.peek() == UInt8(ascii: "{") else {
                _ = try parser.parseDocument()
                return nil
            }
            var body = ModifyRequestBody()
            try parser.readObject { parser, key in
                guard key == "operations", parser.peek() == UInt8(ascii: "[") else {
                    if key == "operations" { body.operations = nil }
                    body.members[key] = try parser.parseValue()
                    return
                }
                body.members["operations"] = nil
                var operations: [Operation] = []
                try parser.readArray { parser in
                    var operation = Operation()
                    guard parser.peek() == UInt8(ascii: "{") else {
                        _ = try parser.parseValue()
                        operations.append(operation)
                        return
                    }
                    try parser.readObject { parser, key in
                        switch key {
                        case "operationType": operation.operationType = try parser.parseValue()
                        case "desiredKeys": operation.desiredKeys = try parser.parseValue()
                        case "record": operation.record = try RecordDraft.read(&parser)
                        default: _ = try parser.parseValue()
                        }
                    }
                    operations.append(operation)
                }
                body.operations = operations
            }
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw parser.fail("unexpected data after the JSON value") }
            return body
        }
    }
}
