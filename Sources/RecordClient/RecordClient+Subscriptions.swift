import RecordModel

extension RecordClient {
    /// `subscriptions/modify` create; a subscription whose ID already exists is left as it is.
    public func saveSubscription(_ subscription: Subscription) async throws {
        let body: JSONValue = ["operations": [["operationType": "create", "subscription": subscription.json]]]
        let answer = try await post("subscriptions/modify", body)
        if let entry = answer["subscriptions"]?.arrayValue?.first, let error = ServerError(json: entry), error.code != .exists {
            throw RecordClientError.server(error, httpStatus: error.code.httpStatus)
        }
    }
}
