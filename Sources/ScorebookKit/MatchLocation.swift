import Foundation
import RecordSync

/// Where a match was played. Deleting the match deletes it.
public struct MatchLocation: SyncedEntity, Equatable {
    public static let recordType = "MatchLocation"
    public static let fieldNames = ["match", "name", "location", "modificationDate"]

    public let recordName: String
    public var modificationDate: Date
    public var match: String
    public var name: String?
    public var latitude: Double?
    public var longitude: Double?

    public init(recordName: String = MatchLocation.newRecordName(), match: String, name: String? = nil,
                latitude: Double? = nil, longitude: Double? = nil, modificationDate: Date = Date())
    {
        self.recordName = recordName
        self.match = match
        self.name = name
        self.latitude = latitude
        self.longitude = longitude
        self.modificationDate = modificationDate
    }

    public init(record: Record) throws {
        let reader = try RecordReader(record, as: MatchLocation.self)
        recordName = record.recordName
        match = try reader.reference("match")
        name = reader.string("name")
        let location = reader.location("location")
        latitude = location?.latitude
        longitude = location?.longitude
        modificationDate = reader.modificationDate
    }

    public func record(in zone: ZoneID) -> Record {
        var location: FieldValue?
        if let latitude, let longitude { location = .location(Location(latitude: latitude, longitude: longitude)) }
        return record(in: zone, fields: ["match": .deleteSelfReference(to: match), "name": name.map(FieldValue.string), "location": location])
    }
}
