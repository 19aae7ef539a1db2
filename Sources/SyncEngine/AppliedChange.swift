import Foundation
import RecordModel

/// A remote change applied to the local store: a record saved, or deleted with its cascade.
public struct AppliedChange: Equatable, Sendable {
    public enum Kind: String, Sendable {
        case saved, deleted
    }

    public var kind: Kind
    public var recordName: String
    public var recordType: String
    /// The record as applied, or as it was before its deletion; nil when a deletion concerned
    /// a record this machine did not hold.
    public var record: Record?
    /// Who deleted (a user record name): for a deletion whose tombstone named its deleter, and
    /// for the records it cascaded to here; nil otherwise (a save, or a server that does not say).
    public var deletedBy: String?

    public init(kind: Kind, recordName: String, recordType: String, record: Record?, deletedBy: String? = nil) {
        self.kind = kind
        self.recordName = recordName
        self.recordType = recordType
        self.record = record
        self.deletedBy = deletedBy
    }

    init(kind: Kind, record: Record, deletedBy: String? = nil) {
        self.init(kind: kind, recordName: record.recordName, recordType: record.recordType, record: record, deletedBy: deletedBy)
    }
}

/// Record names of the form `<RecordType>|~|<UUID>`, so that a tombstone, which
/// may carry only a name, still tells what kind of record went.
public enum RecordNaming {
    public static let separator = "|~|"

    /// A new record name for a type, with an upper-case UUID.
    public static func newRecordName(ofType type: String) -> String {
        "\(type)\(separator)\(UUIDGenerator.uppercase())"
    }

    /// The type named by a record name's prefix, or nil when the name has none.
    public static func recordType(fromRecordName name: String) -> String? {
        guard let range = name.range(of: separator), range.lowerBound > name.startIndex else { return nil }
        return String(name[..<range.lowerBound])
    }

    /// The part after the separator (the UUID), or the whole name when there is no separator.
    public static func identifier(ofRecordName name: String) -> String {
        guard let range = name.range(of: separator) else { return name }
        return String(name[range.upperBound...])
    }
}



enum UUIDGenerator {
    static func uppercase() -> String { UUID().uuidString.uppercased() }
}

/// A local edit the server could not take because the record, or a record it belongs to, was
/// deleted elsewhere: the deletion stands and the edit is gone. Reported, never silent
///.
public struct DroppedChange: Equatable, Sendable {
    public enum Reason: String, Sendable {
        /// The record itself was deleted on another machine.
        case deleted
        /// A record it belongs to (a score's match, a match's game) was deleted elsewhere.
        case parentDeleted
    }

    public var recordName: String
    public var recordType: String
    public var reason: Reason

    public init(recordName: String, recordType: String, reason: Reason) {
        self.recordName = recordName
        self.recordType = recordType
        self.reason = reason
    }
}
