/// Who made a change and when (the `created` and `modified` dictionaries).
public struct ChangeStamp: Equatable, Sendable {
    public var timestamp: Int64
    public var userRecordName: String?
    public var deviceID: String?

    /// The `deviceID` answered for a change whose request named no device (no `X-Device-ID`).
    public static let placeholderDeviceID = "_unknownDevice"

    public init(timestamp: Int64, userRecordName: String? = nil, deviceID: String? = nil) {
        self.timestamp = timestamp
        self.userRecordName = userRecordName
        self.deviceID = deviceID
    }

    public init?(json: JSONValue?) {
        guard let json, let timestamp = json["timestamp"]?.int64Value else { return nil }
        self.init(timestamp: timestamp, userRecordName: json["userRecordName"]?.stringValue, deviceID: json["deviceID"]?.stringValue)
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = ["timestamp": .int(timestamp)]
        if let userRecordName { members["userRecordName"] = .string(userRecordName) }
        if let deviceID { members["deviceID"] = .string(deviceID) }
        return .object(members)
    }
}

/// A record: a name unique within its zone, a type that never changes, typed fields, and the
/// server-assigned change tag that versions it.
public struct Record: Equatable, Sendable {
    public var recordName: String
    public var recordType: String
    public var recordChangeTag: String?
    public var fields: [String: FieldValue]
    /// Fields a request asks to remove (sent with a null `value`); empty on stored records.
    public var removedFieldNames: Set<String> = []
    public var parent: String?
    public var created: ChangeStamp?
    public var modified: ChangeStamp?
    public var zoneID: ZoneID?

    public init(recordName: String, recordType: String, fields: [String: FieldValue] = [:], recordChangeTag: String? = nil,
                parent: String? = nil, zoneID: ZoneID? = nil)
    {
        self.recordName = recordName
        self.recordType = recordType
        self.fields = fields
        self.recordChangeTag = recordChangeTag
        self.parent = parent
        self.zoneID = zoneID
    }

    /// Every reference the record holds, with the name of the field holding it.
    public var references: [(field: String, reference: Reference)] {
        var found: [(field: String, reference: Reference)] = []
        for (name, value) in fields {
            switch value.type {
            case .reference, .list(.reference): found += value.references.map { (name, $0) }
            default: continue  // most fields: no array built
            }
        }
        return found
    }
}

extension Record {
    /// Reads a record dictionary as a client sends it. `recordType` may be empty when the request
    /// leaves it out (an update of an existing record); `schemaType` gives a field's declared type.
    public init(requestJSON json: JSONValue, schemaType: (_ recordType: String, _ field: String) -> FieldType?) throws {
        try self.init(draft: RecordDraft(json: json), schemaType: schemaType)
    }

    /// Checks a record as a client sent it (`RecordDraft`) and reads it; see `init(requestJSON:schemaType:)`.
    public init(draft: RecordDraft, schemaType: (_ recordType: String, _ field: String) -> FieldType?) throws {
        guard draft.isObject else { throw ServerError.badRequest("record must be an object") }
        guard let name = draft.recordName?.stringValue else { throw ServerError.badRequest("record.recordName must be a string") }
        try Names.validateRecordName(name)
        self.recordName = name
        if let typeJSON = draft.recordType, !typeJSON.isNull {
            guard let type = typeJSON.stringValue else { throw ServerError.badRequest("recordType must be a string").with(recordName: name) }
            try Names.validateIdentifier(type, what: "recordType")
            self.recordType = type
        } else {
            self.recordType = ""
        }
        if let tag = draft.recordChangeTag, !tag.isNull {
            guard let tagString = tag.stringValue else { throw ServerError.badRequest("recordChangeTag must be a string") }
            self.recordChangeTag = tagString
        }
        self.fields = [:]
        switch draft.fields {
        case .absent, .notAnObject(.null): break
        case .notAnObject: throw ServerError.badRequest("record.fields must be an object")
        case .list(let list):
            fields.reserveCapacity(list.count)
            for field in list {
                try Names.validateIdentifier(field.name, what: "field name")
                if field.value?.isNull == true || field.notAnObject?.isNull == true {
                    removedFieldNames.insert(field.name)
                    continue
                }
                fields[field.name] = try FieldValue(value: field.value, typeJSON: field.type, fieldName: field.name,
                                                    schemaType: schemaType(recordType, field.name))
            }
        }
        if let parentJSON = draft.parent, !parentJSON.isNull {
            guard let parentName = parentJSON["recordName"]?.stringValue else {
                throw ServerError.badRequest("record.parent must be an object with a recordName")
            }
            try Names.validateRecordName(parentName)
            self.parent = parentName
        }
        if let zone = draft.zoneID, !zone.isNull { self.zoneID = try ZoneID(json: zone) }
    }

    /// Reads a record dictionary as the server sends it (client side).
    public init(responseJSON json: JSONValue) throws {
        try self.init(requestJSON: json, schemaType: { _, _ in nil })
        created = ChangeStamp(json: json["created"])
        modified = ChangeStamp(json: json["modified"])
    }

    /// The serialized `fields` dictionary, as the server stores it.
    public func fieldsJSONBytes() -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(256)
        var first = true
        for (name, field) in fields {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            JSONValue.appendString(name, to: &out)
            out.appendLiteral(#":{"value":"#)
            field.value.serialize(into: &out)
            out.appendLiteral(#","type":""#)
            field.type.appendWireName(to: &out)
            out.appendLiteral(#""}"#)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The record dictionary. With `desiredKeys`, only those fields are included.
    public func json(desiredKeys: Set<String>? = nil) -> JSONValue {
        var selected = fields
        if let desiredKeys { selected = selected.filter { desiredKeys.contains($0.key) } }
        return json(fieldsJSON: .object(selected.mapValues(\.json)))
    }

    /// The record dictionary around an already-serialized fields dictionary.
    public func json(fieldsJSON: JSONValue) -> JSONValue {
        var members: [String: JSONValue] = [
            "recordName": .string(recordName), "recordType": .string(recordType), "fields": fieldsJSON,
        ]
        if let recordChangeTag { members["recordChangeTag"] = .string(recordChangeTag) }
        if let created { members["created"] = created.json }
        if let modified { members["modified"] = modified.json }
        if let zoneID { members["zoneID"] = zoneID.json }
        if let parent { members["parent"] = ["recordName": .string(parent)] }
        return .object(members)
    }

    /// Parses a stored fields dictionary (typed wire JSON) back into field values.
    public static func fields(fromStoredJSON bytes: [UInt8]) throws -> [String: FieldValue] {
        guard let members = try JSONValue.parse(bytes).objectValue else { return [:] }
        var fields: [String: FieldValue] = [:]
        for (name, json) in members {
            fields[name] = try FieldValue(json: json, fieldName: name, schemaType: nil)
        }
        return fields
    }
}
