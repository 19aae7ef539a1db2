import RecordModel

/// A subscription as `subscriptions/modify` takes it (CONTRACT §3.7).
public struct Subscription: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case query, zone, database
    }

    public var subscriptionID: String
    public var kind: Kind
    public var zoneID: ZoneID?
    /// For query subscriptions: the record type watched.
    public var recordType: String?
    public var firesOn: [String]
    public var firesOnce: Bool

    public init(subscriptionID: String, kind: Kind, zoneID: ZoneID? = nil, recordType: String? = nil,
                firesOn: [String] = ["create", "update", "delete"], firesOnce: Bool = false)
    {
        self.subscriptionID = subscriptionID
        self.kind = kind
        self.zoneID = zoneID
        self.recordType = recordType
        self.firesOn = firesOn
        self.firesOnce = firesOnce
    }

    var json: JSONValue {
        var members: [String: JSONValue] = [
            "subscriptionID": .string(subscriptionID), "subscriptionType": .string(kind.rawValue),
            "firesOn": .array(firesOn.map { .string($0) }), "firesOnce": .bool(firesOnce),
        ]
        if let zoneID { members["zoneID"] = ["zoneName": .string(zoneID.zoneName)] }
        if let recordType { members["query"] = ["recordType": .string(recordType), "filterBy": []] }
        return .object(members)
    }
}

extension RecordClient {
    /// Creates `subscription`, or leaves it as it is when one with its ID already exists.
    public func saveSubscription(_ subscription: Subscription) async throws {
        let body: JSONValue = ["operations": [["operationType": "create", "subscription": subscription.json]]]
        let answer = try await post("subscriptions/modify", body)
        if let entry = answer["subscriptions"]?.arrayValue?.first, let error = ServerError(json: entry), error.code != .exists {
            throw RecordClientError.server(error, httpStatus: error.code.httpStatus)
        }
    }
}
