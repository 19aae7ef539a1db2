import Foundation
import RecordModel

/// A photo of a match. The image asset itself is later work; its field is kept as the server
/// holds it. Deleting the match deletes it.
public struct MatchImage: CloudKitCompatible, Equatable {
    public static let recordType = "MatchImage"
    public static let fieldNames = ["match", "modificationDate"]

    public let recordName: String
    public var modificationDate: Date
    public var match: String

    public init(recordName: String = MatchImage.newRecordName(), match: String, modificationDate: Date = Date()) {
        self.recordName = recordName
        self.match = match
        self.modificationDate = modificationDate
    }

    public init(record: Record) throws {
        let reader = try RecordReader(record, as: MatchImage.self)
        recordName = record.recordName
        match = try reader.reference("match")
        modificationDate = reader.modificationDate
    }

    public func record(in zone: ZoneID) -> Record {
        baseRecord(in: zone, fields: ["match": .owner(match)])
    }

    public var displayName: String { "image" }
    public var jsonFields: [String: JSONValue] { ["match": .string(match)] }
}
