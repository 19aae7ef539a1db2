import Foundation
import RecordModel
import SyncEngine

/// An entity that lives as a record in the Scorebook zone. Conforming one type is all it takes
/// to add an entity: the store, sync, deletions and output find it through `Scorebook.entityTypes`.
///
/// ```swift
/// struct Game: CloudKitCompatible {
///     static let recordType = "Game"
///     static let fieldNames = ["name", "lowScoreWins", "modificationDate"]
///     let recordName: String          // "Game|~|<UUID>", fixed at creation
///     var modificationDate: Date
///     var name: String
///     func record(in zone: ZoneID) -> Record { … }
///     init(record: Record) throws { … }
/// }
/// ```
public protocol CloudKitCompatible: Sendable {
    /// The record type, also the prefix of every record name of this type.
    static var recordType: String { get }
    /// The fields this type writes; a field it leaves out of `record(in:)` is removed on save.
    /// Fields a record carries beyond these (written by a newer version) are kept.
    static var fieldNames: [String] { get }
    /// `<RecordType>|~|<UPPERCASE-UUID>`, fixed when the entity is made.
    var recordName: String { get }
    /// When the entity was last edited; it settles edits of the same field on two machines.
    var modificationDate: Date { get set }
    func record(in zone: ZoneID) -> Record
    init(record: Record) throws
    /// How the entity reads in lists and messages.
    var displayName: String { get }
    /// The names by which a person may refer to the entity on the command line.
    var referenceNames: [String] { get }
    /// The entity's own fields for `--json` output: camelCase keys, references as record names.
    var jsonFields: [String: JSONValue] { get }
}

extension CloudKitCompatible {
    public var referenceNames: [String] { [] }

    /// A new record name for this type.
    public static func newRecordName() -> String { RecordNaming.newRecordName(ofType: recordType) }

    /// The entity as `--json` prints it.
    public var json: JSONValue {
        var members = jsonFields
        members["recordName"] = .string(recordName)
        members["recordType"] = .string(Self.recordType)
        members["modificationDate"] = .string(ISO8601.string(from: modificationDate))
        return .object(members)
    }

    /// A record with the type's name and the modification date; each type adds its fields.
    func baseRecord(in zone: ZoneID, fields: [String: FieldValue?]) -> Record {
        var present = fields.compactMapValues { $0 }
        present[RecordMerge.modificationDateField] = .date(modificationDate)
        return Record(recordName: recordName, recordType: Self.recordType, fields: present, zoneID: zone)
    }
}

/// Why a record could not be read as an entity.
public struct EntityDecodingError: Error, CustomStringConvertible {
    public var description: String
}

/// Typed reads of a record's fields for `init(record:)`.
struct RecordReader {
    let record: Record

    init<E: CloudKitCompatible>(_ record: Record, as type: E.Type) throws {
        guard record.recordType == E.recordType else {
            throw EntityDecodingError(description: "\(record.recordName) is a \(record.recordType), not a \(E.recordType)")
        }
        self.record = record
    }

    func string(_ name: String) -> String? { record.fields[name]?.stringValue }
    func int(_ name: String) -> Int64? { record.fields[name]?.int64Value }
    func double(_ name: String) -> Double? { record.fields[name]?.doubleValue }
    func date(_ name: String) -> Date? { record.fields[name]?.dateValue }
    func location(_ name: String) -> Location? { record.fields[name]?.locationValue }
    func asset(_ name: String) -> FieldValue? { record.fields[name].flatMap { $0.type == .asset ? $0 : nil } }

    var modificationDate: Date {
        date(RecordMerge.modificationDateField)
            ?? record.modified.map { Date(timeIntervalSince1970: Double($0.timestamp) / 1000) }
            ?? Date(timeIntervalSince1970: 0)
    }

    func reference(_ name: String) throws -> String {
        guard let target = record.fields[name]?.referenceValue?.recordName else {
            throw EntityDecodingError(description: "\(record.recordName) has no \(name) reference")
        }
        return target
    }
}

extension FieldValue {
    /// A `DELETE_SELF` reference: deleting the target deletes the record holding it.
    static func owner(_ recordName: String) -> FieldValue {
        .reference(Reference(recordName: recordName, action: .deleteSelf))
    }
}
