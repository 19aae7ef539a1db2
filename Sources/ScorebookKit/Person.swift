import Foundation
import RecordSync

/// Someone who plays.
public struct Person: SyncedEntity, Equatable {
    public static let recordType = "Person"
    public static let fieldNames = ["firstName", "lastName", "emailAddress", "avatar", "modificationDate"]

    public let recordName: String
    public var modificationDate: Date
    public var firstName: String
    public var lastName: String?
    public var emailAddress: String?
    /// The avatar picture (`ASSET`), as the record holds it.
    public var avatar: FieldValue?

    public init(recordName: String = Person.newRecordName(), firstName: String, lastName: String? = nil,
                emailAddress: String? = nil, modificationDate: Date = Date())
    {
        self.recordName = recordName
        self.firstName = firstName
        self.lastName = lastName
        self.emailAddress = emailAddress
        self.modificationDate = modificationDate
    }

    public init(record: Record) throws {
        let reader = try RecordReader(record, as: Person.self)
        recordName = record.recordName
        firstName = reader.string("firstName") ?? ""
        lastName = reader.string("lastName")
        emailAddress = reader.string("emailAddress")
        avatar = reader.asset("avatar")
        modificationDate = reader.modificationDate
    }

    public func record(in zone: ZoneID) -> Record {
        record(in: zone, fields: [
            "firstName": .string(firstName), "lastName": lastName.map(FieldValue.string),
            "emailAddress": emailAddress.map(FieldValue.string), "avatar": avatar,
        ])
    }

    /// "First Last", or the first name alone.
    public var fullName: String {
        guard let lastName, !lastName.isEmpty else { return firstName }
        return "\(firstName) \(lastName)"
    }

    /// The avatar's picture (checksum and size), when the person has one.
    public var avatarPicture: PictureReference? { PictureReference(avatar) }
}
