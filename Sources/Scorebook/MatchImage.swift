import Foundation
import RecordModel
import SyncEngine

/// A photo of a match (`image`, an `ASSET`). Deleting the match deletes it.
public struct MatchImage: CloudKitCompatible, Equatable {
    public static let recordType = "MatchImage"
    public static let fieldNames = ["match", "image", "modificationDate"]

    public let recordName: String
    public var modificationDate: Date
    public var match: String
    /// The picture, as the record holds it.
    public var image: FieldValue?

    public init(recordName: String = MatchImage.newRecordName(), match: String, image: FieldValue? = nil, modificationDate: Date = Date()) {
        self.recordName = recordName
        self.match = match
        self.image = image
        self.modificationDate = modificationDate
    }

    public init(record: Record) throws {
        let reader = try RecordReader(record, as: MatchImage.self)
        recordName = record.recordName
        match = try reader.reference("match")
        image = reader.asset("image")
        modificationDate = reader.modificationDate
    }

    public func record(in zone: ZoneID) -> Record {
        baseRecord(in: zone, fields: ["match": .owner(match), "image": image])
    }

    /// The photo's picture (checksum and size).
    public var picture: PictureReference? { PictureReference(image) }

    public var displayName: String { "photo \(recordName.split(separator: "|").last.map(String.init)?.prefix(8) ?? "")" }
    public var jsonFields: [String: JSONValue] { ["match": .string(match), "image": picture?.json ?? .null] }
}

extension PictureReference {
    /// How `--json` shows a picture: its SHA-256 (hex) and size.
    public var json: JSONValue { ["sha256": .string(checksum), "size": .int(size)] }
}
