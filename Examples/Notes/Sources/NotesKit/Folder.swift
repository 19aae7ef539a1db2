import Foundation
import RecordSync

/// A folder of notes. Deleting it deletes its notes, on every machine.
public struct Folder: SyncedEntity, Equatable {
    public static let recordType = "Folder"
    // Every field the type writes: one it leaves empty is removed on save; fields a newer
    // version of the app adds are kept.
    public static let fieldNames = ["name", "modificationDate"]

    public let recordName: String
    public var modificationDate: Date
    public var name: String

    public init(name: String, recordName: String = Folder.newRecordName(), modificationDate: Date = Date()) {
        self.recordName = recordName
        self.name = name
        self.modificationDate = modificationDate
    }

    public func record(in zone: ZoneID) -> Record {
        record(in: zone, fields: ["name": .string(name)])
    }

    public init(record: Record) throws {
        let reader = try RecordReader(record, as: Folder.self)
        recordName = record.recordName
        name = reader.string("name") ?? ""
        modificationDate = reader.modificationDate
    }
}
