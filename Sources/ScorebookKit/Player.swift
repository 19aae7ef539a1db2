import Foundation
import RecordSync

/// A person's seat in a match. Deleting the match or the person deletes it.
public struct Player: SyncedEntity, Equatable {
    public static let recordType = "Player"
    public static let fieldNames = ["match", "person", "seat", "modificationDate"]

    public let recordName: String
    public var modificationDate: Date
    public var match: String
    public var person: String
    public var seat: Int64

    public init(recordName: String = Player.newRecordName(), match: String, person: String, seat: Int64, modificationDate: Date = Date()) {
        self.recordName = recordName
        self.match = match
        self.person = person
        self.seat = seat
        self.modificationDate = modificationDate
    }

    public init(record: Record) throws {
        let reader = try RecordReader(record, as: Player.self)
        recordName = record.recordName
        match = try reader.reference("match")
        person = try reader.reference("person")
        seat = reader.int("seat") ?? 0
        modificationDate = reader.modificationDate
    }

    public func record(in zone: ZoneID) -> Record {
        record(in: zone, fields: ["match": .deleteSelfReference(to: match), "person": .deleteSelfReference(to: person), "seat": .int64(seat)])
    }
}
