import Foundation
import RecordSync

/// One playing of a game. Deleting its game deletes it.
public struct Match: SyncedEntity, Equatable {
    public static let recordType = "Match"
    public static let fieldNames = ["game", "startDate", "endDate", "notes", "modificationDate"]

    public let recordName: String
    public var modificationDate: Date
    /// The Game's record name.
    public var game: String
    public var startDate: Date
    /// Set when the match is finished.
    public var endDate: Date?
    public var notes: String?

    public init(recordName: String = Match.newRecordName(), game: String, startDate: Date, endDate: Date? = nil,
                notes: String? = nil, modificationDate: Date = Date())
    {
        self.recordName = recordName
        self.game = game
        self.startDate = startDate
        self.endDate = endDate
        self.notes = notes
        self.modificationDate = modificationDate
    }

    public init(record: Record) throws {
        let reader = try RecordReader(record, as: Match.self)
        recordName = record.recordName
        game = try reader.reference("game")
        startDate = reader.date("startDate") ?? reader.modificationDate
        endDate = reader.date("endDate")
        notes = reader.string("notes")
        modificationDate = reader.modificationDate
    }

    public func record(in zone: ZoneID) -> Record {
        record(in: zone, fields: [
            "game": .deleteSelfReference(to: game), "startDate": .date(startDate), "endDate": endDate.map(FieldValue.date),
            "notes": notes.map(FieldValue.string),
        ])
    }

    public var isFinished: Bool { endDate != nil }
}
