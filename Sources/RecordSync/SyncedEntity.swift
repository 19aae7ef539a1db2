import Foundation

/// A type an app syncs: it lives as one record in a zone, and this is all the sync needs of it.
///
/// ```swift
/// struct Note: SyncedEntity {
///     static let recordType = "Note"
///     static let fieldNames = ["folder", "text", "modificationDate"]
///     let recordName: String          // "Note|~|<UUID>", fixed at creation
///     var modificationDate: Date
///     var folder: String
///     var text: String
///     func record(in zone: ZoneID) -> Record {
///         record(in: zone, fields: ["folder": .deleteSelfReference(to: folder), "text": .string(text)])
///     }
///     init(record: Record) throws {
///         let reader = try RecordReader(record, as: Note.self)
///         recordName = record.recordName
///         folder = try reader.reference("folder")
///         text = reader.string("text") ?? ""
///         modificationDate = reader.modificationDate
///     }
/// }
/// ```
public protocol SyncedEntity: Sendable {
    /// The record type, also the prefix of every record name of this type.
    static var recordType: String { get }
    /// The fields this type writes; a field it leaves out of `record(in:)` is removed on save.
    /// Fields a record carries beyond these (written by a newer version) are kept.
    static var fieldNames: [String] { get }
    /// `<RecordType>|~|<UPPERCASE-UUID>`, fixed when the entity is made: any machine tells the
    /// type of a record, even a deleted one, from its bare name.
    var recordName: String { get }
    /// When the entity was last edited; it settles edits of the same field on two machines.
    var modificationDate: Date { get set }
    /// The entity as a record of `zone`.
    func record(in zone: ZoneID) -> Record
    /// The entity a record holds; throws `EntityDecodingError` when it is not one.
    init(record: Record) throws
}

extension SyncedEntity {
    /// A new record name for this type: `<RecordType>|~|<UUID>`.
    public static func newRecordName() -> String { RecordNaming.newRecordName(ofType: recordType) }

    /// A record of this type with the entity's name, `fields` (nil values are left out, so
    /// saving removes them) and the modification date; `parent` names the record this one
    /// belongs to (a share of a parent covers it).
    public func record(in zone: ZoneID, fields: [String: FieldValue?], parent: String? = nil) -> Record {
        var present = fields.compactMapValues { $0 }
        present[RecordMerge.modificationDateField] = .date(modificationDate)
        return Record(recordName: recordName, recordType: Self.recordType, fields: present, parent: parent, zoneID: zone)
    }

    /// The record the local store keeps for the entity: its fields, and the removal of the
    /// fields of `fieldNames` it left empty (fields it does not know are kept).
    public var localRecord: Record {
        // The store keeps records without a zone: the book it was opened on is the zone.
        var local = record(in: ZoneID(zoneName: "_local"))
        local.zoneID = nil
        local.removedFieldNames = Set(Self.fieldNames).subtracting(local.fields.keys)
        return local
    }
}

/// Why a record could not be read as an entity.
public struct EntityDecodingError: Error, CustomStringConvertible, Sendable {
    public var description: String

    public init(_ description: String) { self.description = description }
}

/// Typed reads of a record's fields, for `init(record:)`.
public struct RecordReader: Sendable {
    public let record: Record

    /// A reader of `record`, which must be of `type`'s record type.
    public init<E: SyncedEntity>(_ record: Record, as type: E.Type) throws {
        guard record.recordType == E.recordType else {
            throw EntityDecodingError("\(record.recordName) is a \(record.recordType), not a \(E.recordType)")
        }
        self.record = record
    }

    public func string(_ name: String) -> String? { record.fields[name]?.stringValue }
    public func int(_ name: String) -> Int64? { record.fields[name]?.int64Value }
    public func double(_ name: String) -> Double? { record.fields[name]?.doubleValue }
    public func date(_ name: String) -> Date? { record.fields[name]?.dateValue }
    public func location(_ name: String) -> Location? { record.fields[name]?.locationValue }
    /// An `ASSET` field, as the record holds it (`SyncStore.assetFile(_:)` finds its file).
    public func asset(_ name: String) -> FieldValue? { record.fields[name].flatMap { $0.type == .asset ? $0 : nil } }

    /// The entity's modification date: its field, else the server's stamp, else 1970.
    public var modificationDate: Date {
        date(RecordMerge.modificationDateField)
            ?? record.modified.map { Date(timeIntervalSince1970: Double($0.timestamp) / 1000) }
            ?? Date(timeIntervalSince1970: 0)
    }

    /// The record name a reference field points at; throws when the field is missing.
    public func reference(_ name: String) throws -> String {
        guard let target = record.fields[name]?.referenceValue?.recordName else {
            throw EntityDecodingError("\(record.recordName) has no \(name) reference")
        }
        return target
    }

    /// The record name of the record's parent, if it has one.
    public var parent: String? { record.parent }
}

extension FieldValue {
    /// A `DELETE_SELF` reference: deleting the target deletes the record holding it, here,
    /// on the server and on every machine.
    public static func deleteSelfReference(to recordName: String) -> FieldValue {
        .reference(Reference(recordName: recordName, action: .deleteSelf))
    }

    /// A plain reference (`NONE`): the target may go without taking this record with it.
    public static func reference(to recordName: String) -> FieldValue {
        .reference(Reference(recordName: recordName, action: .none))
    }
}
