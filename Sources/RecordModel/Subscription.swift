/// A subscription: which changes of a database notify the user's devices.
public struct Subscription: Equatable, Sendable {
    public enum Kind: String, Sendable { case query, zone, database }
    /// The changes a query subscription fires on; `fo` in a notification is 1, 2 or 3.
    public enum Trigger: String, Sendable, CaseIterable {
        case create, update, delete
        public var firesOnCode: Int64 { self == .create ? 1 : self == .update ? 2 : 3 }
    }

    public var subscriptionID: String
    public var kind: Kind
    /// The zone of a query or zone subscription.
    public var zoneID: ZoneID?
    /// A query subscription's `{"recordType", "filterBy"}`.
    public var query: JSONValue?
    public var firesOn: Set<Trigger>
    public var firesOnce: Bool
    /// Fields whose values a creation or update notification carries in `af`.
    public var desiredKeys: [String]

    public init(subscriptionID: String, kind: Kind, zoneID: ZoneID? = nil, query: JSONValue? = nil,
                firesOn: Set<Trigger> = Set(Trigger.allCases), firesOnce: Bool = false, desiredKeys: [String] = [])
    {
        self.subscriptionID = subscriptionID
        self.kind = kind
        self.zoneID = zoneID
        self.query = query
        self.firesOn = firesOn
        self.firesOnce = firesOnce
        self.desiredKeys = desiredKeys
    }

    public init(json: JSONValue) throws {
        guard case .object = json else { throw ServerError.badRequest("subscription must be an object") }
        guard let id = json["subscriptionID"]?.stringValue, Names.isValidName(id) else {
            throw ServerError.badRequest("subscriptionID must be 1-255 printable ASCII characters")
        }
        guard let kindName = json["subscriptionType"]?.stringValue, let kind = Kind(rawValue: kindName) else {
            throw ServerError.badRequest("subscriptionType must be query, zone or database")
        }
        self.subscriptionID = id
        self.kind = kind
        self.zoneID = kind == .database ? nil : try ZoneID.fromRequest(json["zoneID"])
        if kind == .query {
            guard let query = json["query"], query["recordType"]?.stringValue != nil else {
                throw ServerError.badRequest("a query subscription needs query.recordType")
            }
            self.query = query
        }
        if let triggers = json["firesOn"], !triggers.isNull {
            guard let list = triggers.arrayValue else { throw ServerError.badRequest("firesOn must be an array") }
            self.firesOn = Set(try list.map {
                guard let name = $0.stringValue, let trigger = Trigger(rawValue: name) else {
                    throw ServerError.badRequest("firesOn entries must be create, update or delete")
                }
                return trigger
            })
            guard !firesOn.isEmpty else { throw ServerError.badRequest("firesOn must name at least one of create, update, delete") }
        } else {
            self.firesOn = Set(Trigger.allCases)
        }
        if let once = json["firesOnce"], !once.isNull {
            guard let flag = once.boolValue else { throw ServerError.badRequest("firesOnce must be true or false") }
            self.firesOnce = flag
        } else {
            self.firesOnce = false
        }
        let keys = json["notificationInfo"]?["desiredKeys"]?.arrayValue ?? []
        self.desiredKeys = try keys.map {
            guard let key = $0.stringValue else { throw ServerError.badRequest("desiredKeys must be strings") }
            return key
        }
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "subscriptionID": .string(subscriptionID), "subscriptionType": .string(kind.rawValue),
            "firesOn": .array(Trigger.allCases.filter(firesOn.contains).map { .string($0.rawValue) }),
            "firesOnce": .bool(firesOnce),
            "notificationInfo": ["desiredKeys": .array(desiredKeys.map { .string($0) })],
        ]
        if let zoneID { members["zoneID"] = zoneID.json }
        if let query { members["query"] = query }
        return .object(members)
    }
}
