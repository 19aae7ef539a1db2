/// A zone of a database. `ownerRecordName` is filled in by the server on responses.
public struct ZoneID: Hashable, Sendable {
    public static let defaultZoneName = "_defaultZone"
    public static let `default` = ZoneID(zoneName: defaultZoneName)

    public var zoneName: String
    public var ownerRecordName: String?

    public init(zoneName: String, ownerRecordName: String? = nil) {
        self.zoneName = zoneName
        self.ownerRecordName = ownerRecordName
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = ["zoneName": .string(zoneName)]
        if let ownerRecordName { members["ownerRecordName"] = .string(ownerRecordName) }
        return .object(members)
    }
}
