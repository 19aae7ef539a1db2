import Foundation
import RecordSync

/// Points a player scored, in a round or overall. Deleting the player deletes it.
public struct Score: SyncedEntity, Equatable {
    public static let recordType = "Score"
    public static let fieldNames = ["player", "value", "round", "modificationDate"]

    public let recordName: String
    public var modificationDate: Date
    public var player: String
    public var value: Double
    public var round: Int64?

    public init(recordName: String = Score.newRecordName(), player: String, value: Double, round: Int64? = nil,
                modificationDate: Date = Date())
    {
        self.recordName = recordName
        self.player = player
        self.value = value
        self.round = round
        self.modificationDate = modificationDate
    }

    public init(record: Record) throws {
        let reader = try RecordReader(record, as: Score.self)
        recordName = record.recordName
        player = try reader.reference("player")
        value = reader.double("value") ?? 0
        round = reader.int("round")
        modificationDate = reader.modificationDate
    }

    public func record(in zone: ZoneID) -> Record {
        record(in: zone, fields: ["player": .deleteSelfReference(to: player), "value": .double(value), "round": round.map(FieldValue.int64)])
    }
}
