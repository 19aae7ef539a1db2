import Foundation
import RecordSync

/// A note in a folder: its text, and whether it is pinned.
public struct Note: SyncedEntity, Equatable {
    public static let recordType = "Note"
    public static let fieldNames = ["folder", "text", "pinned", "modificationDate"]

    public let recordName: String
    public var modificationDate: Date
    /// The folder's record name.
    public var folder: String
    public var text: String
    public var pinned: Bool

    public init(folder: Folder, text: String, pinned: Bool = false, recordName: String = Note.newRecordName(),
                modificationDate: Date = Date())
    {
        self.recordName = recordName
        self.folder = folder.recordName
        self.text = text
        self.pinned = pinned
        self.modificationDate = modificationDate
    }

    public func record(in zone: ZoneID) -> Record {
        // DELETE_SELF: deleting the folder deletes the note, here, on the server and everywhere.
        record(in: zone, fields: [
            "folder": .deleteSelfReference(to: folder), "text": .string(text), "pinned": .int64(pinned ? 1 : 0),
        ])
    }

    public init(record: Record) throws {
        let reader = try RecordReader(record, as: Note.self)
        recordName = record.recordName
        folder = try reader.reference("folder")
        text = reader.string("text") ?? ""
        pinned = (reader.int("pinned") ?? 0) != 0
        modificationDate = reader.modificationDate
    }
}
