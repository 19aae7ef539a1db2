import Foundation
import RecordSync

/// A photo of a match (`image`, an `ASSET`). Deleting the match deletes it.
public struct MatchImage: SyncedEntity, Equatable {
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
        record(in: zone, fields: ["match": .deleteSelfReference(to: match), "image": image])
    }

    /// The photo's picture (checksum and size).
    public var picture: PictureReference? { PictureReference(image) }
}
