/// What deleting a reference's target does to the record holding the reference.
public enum ReferenceAction: String, Sendable, CaseIterable {
    case none = "NONE"
    case deleteSelf = "DELETE_SELF"
    case validate = "VALIDATE"
}

/// A reference to another record of the same zone.
public struct Reference: Hashable, Sendable {
    public var recordName: String
    public var action: ReferenceAction
    /// The zone a CloudKit-style client named in the reference's `zoneID`, kept and echoed; the
    /// store refuses one naming another zone than the record's own.
    public var zoneName: String?

    public init(recordName: String, action: ReferenceAction = .none, zoneName: String? = nil) {
        self.recordName = recordName
        self.action = action
        self.zoneName = zoneName
    }

    public init(json: JSONValue) throws {
        guard case .object = json, let name = json["recordName"]?.stringValue else {
            throw ServerError.badRequest("a reference must be an object with a string recordName")
        }
        try Names.validateRecordName(name)
        let actionName = json["action"]?.stringValue ?? ReferenceAction.none.rawValue
        guard let action = ReferenceAction(rawValue: actionName) else {
            throw ServerError.badRequest("unknown reference action '\(actionName)'")
        }
        var zoneName: String?
        if let zoneID = json["zoneID"], zoneID != .null {
            guard let name = zoneID["zoneName"]?.stringValue else {
                throw ServerError.badRequest("a reference's zoneID must be an object with a string zoneName")
            }
            zoneName = name
        }
        self.recordName = name
        self.action = action
        self.zoneName = zoneName
    }

    public var json: JSONValue {
        guard let zoneName else { return ["recordName": .string(recordName), "action": .string(action.rawValue)] }
        return ["recordName": .string(recordName), "action": .string(action.rawValue), "zoneID": ["zoneName": .string(zoneName)]]
    }
}

/// A geographic location; the optional members are carried through as given.
public struct Location: Equatable, Sendable {
    public var latitude: Double
    public var longitude: Double
    public var extra: [String: JSONValue]

    public init(latitude: Double, longitude: Double, extra: [String: JSONValue] = [:]) {
        self.latitude = latitude
        self.longitude = longitude
        self.extra = extra
    }

    static let optionalMembers = ["horizontalAccuracy", "verticalAccuracy", "altitude", "speed", "course", "timestamp"]

    public init(json: JSONValue) throws {
        guard let latitude = json["latitude"]?.doubleValue, let longitude = json["longitude"]?.doubleValue,
            (-90...90).contains(latitude), (-180...180).contains(longitude)
        else { throw ServerError.badRequest("a location needs numeric latitude (-90…90) and longitude (-180…180)") }
        self.latitude = latitude
        self.longitude = longitude
        var extra: [String: JSONValue] = [:]
        for key in Location.optionalMembers {
            if let value = json[key]?.doubleValue { extra[key] = .double(value) }
        }
        self.extra = extra
    }

    public var json: JSONValue {
        var members = extra
        members["latitude"] = .double(latitude)
        members["longitude"] = .double(longitude)
        return .object(members)
    }
}
