import Foundation
import RecordSync

/// A game that matches are played of.
public struct Game: SyncedEntity, Equatable {
    public static let recordType = "Game"
    public static let fieldNames = ["name", "lowScoreWins", "modificationDate"]

    public let recordName: String
    public var modificationDate: Date
    public var name: String
    /// Whether the lowest total wins (golf) instead of the highest.
    public var lowScoreWins: Bool

    public init(recordName: String = Game.newRecordName(), name: String, lowScoreWins: Bool = false, modificationDate: Date = Date()) {
        self.recordName = recordName
        self.name = name
        self.lowScoreWins = lowScoreWins
        self.modificationDate = modificationDate
    }

    public init(record: Record) throws {
        let reader = try RecordReader(record, as: Game.self)
        recordName = record.recordName
        name = reader.string("name") ?? ""
        lowScoreWins = (reader.int("lowScoreWins") ?? 0) != 0
        modificationDate = reader.modificationDate
    }

    public func record(in zone: ZoneID) -> Record {
        record(in: zone, fields: ["name": .string(name), "lowScoreWins": .int64(lowScoreWins ? 1 : 0)])
    }
}
