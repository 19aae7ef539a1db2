import RecordModel

/// One entry of a `records/modify` request.
public struct RecordOperation: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case create, update, forceUpdate, replace, forceReplace, delete, forceDelete

        public var isDelete: Bool { self == .delete || self == .forceDelete }
    }

    public var kind: Kind
    /// The record to save; for deletions only its name (and tag, for `delete`) are sent.
    public var record: Record

    public init(kind: Kind, record: Record) {
        self.kind = kind
        self.record = record
    }

    public var recordName: String { record.recordName }

    public static func create(_ record: Record) -> RecordOperation { RecordOperation(kind: .create, record: record) }
    public static func update(_ record: Record) -> RecordOperation { RecordOperation(kind: .update, record: record) }
    public static func forceDelete(_ recordName: String, recordType: String = "") -> RecordOperation {
        RecordOperation(kind: .forceDelete, record: Record(recordName: recordName, recordType: recordType))
    }

    /// The wire form. Fields listed in `record.removedFieldNames` are sent with a null value,
    /// which asks the server to remove them.
    var json: JSONValue {
        var recordJSON: JSONValue
        if kind.isDelete {
            var members: [String: JSONValue] = ["recordName": .string(record.recordName)]
            if let tag = record.recordChangeTag { members["recordChangeTag"] = .string(tag) }
            recordJSON = .object(members)
        } else {
            var fields = record.fields.mapValues(\.json)
            for removed in record.removedFieldNames where fields[removed] == nil { fields[removed] = ["value": .null] }
            var plain = record
            plain.zoneID = nil
            plain.created = nil
            plain.modified = nil
            recordJSON = plain.json(fieldsJSON: .object(fields))
        }
        return ["operationType": .string(kind.rawValue), "record": recordJSON]
    }
}

/// The server's answer for one operation, in request order.
public enum RecordOperationResult: Sendable, Equatable {
    case saved(Record)
    case deleted(recordName: String)
    case failed(ServerError)

    init(json: JSONValue) throws {
        if let error = ServerError(json: json) {
            self = .failed(error)
        } else if json["deleted"]?.boolValue == true, let name = json["recordName"]?.stringValue {
            self = .deleted(recordName: name)
        } else {
            do {
                self = .saved(try Record(responseJSON: json))
            } catch {
                throw RecordClientError.invalidResponse("records/modify entry that is not a record: \(error)")
            }
        }
    }
}
