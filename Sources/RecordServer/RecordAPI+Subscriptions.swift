import Foundation
import RecordModel
import RecordStore

extension RecordAPI {
    func modifySubscriptions(_ body: JSONValue, _ scope: DatabaseScope) async throws -> JSONValue {
        let operations = try body.requiredArray("operations").map { operation -> SubscriptionOperation in
            guard let type = operation["operationType"]?.stringValue, ["create", "update", "delete"].contains(type) else {
                throw ServerError.badRequest("subscription operationType must be create, update or delete")
            }
            guard let subscription = operation["subscription"] else { throw ServerError.badRequest("operation \(type) needs a subscription") }
            if type == "delete" {
                guard let id = subscription["subscriptionID"]?.stringValue else { throw ServerError.badRequest("delete needs a subscriptionID") }
                return .delete(subscriptionID: id)
            }
            return .save(try Subscription(json: subscription))
        }
        let results = try await self.store.modifySubscriptions(scope, operations: operations)
        let entries: [JSONValue] = zip(operations, results).map { operation, result in
            switch result {
            case .success(let saved?): return saved.json
            case .success(nil):
                guard case .delete(let id) = operation else { return [:] }
                return ["subscriptionID": .string(id), "deleted": true]
            case .failure(let error): return error.json()
            }
        }
        return ["subscriptions": .array(entries)]
    }

    func listSubscriptions(_ scope: DatabaseScope) async throws -> JSONValue {
        let subscriptions = try await self.store.listSubscriptions(scope)
        return ["subscriptions": .array(subscriptions.map(\.json))]
    }

    func lookupSubscriptions(_ body: JSONValue, _ scope: DatabaseScope) async throws -> JSONValue {
        let ids = try body.requiredArray("subscriptions").map { entry -> String in
            guard let id = entry["subscriptionID"]?.stringValue else { throw ServerError.badRequest("every entry needs a subscriptionID") }
            return id
        }
        let all = try await self.store.listSubscriptions(scope)
        let entries: [JSONValue] = ids.map { id in
            if let found = all.first(where: { $0.subscriptionID == id }) { return found.json }
            var error = ServerError(.notFound, "subscription '\(id)' does not exist")
            error.subscriptionID = id
            return error.json()
        }
        return ["subscriptions": .array(entries)]
    }

    /// `tokens/create`: a new delivery channel for one device.
    func createToken(_ body: JSONValue, _ scope: DatabaseScope, request: RequestFacts) async throws -> JSONValue {
        let environment = try body.optionalString("apnsEnvironment") ?? "development"
        let token = try await self.store.createPushToken(scope, apnsEnvironment: environment, authTokenHash: request.userTokenHash)
        return channelJSON(token, scope, request: request)
    }

    /// `tokens/register` (CloudKit: `{"apnsEnvironment", "apnsToken"}`, no documented answer). This
    /// daemon delivers through its courier, not APNs, so the token must be one the caller made with
    /// `tokens/create` (else `404 NOT_FOUND`, or `403 ACCESS_DENIED` for another user's); the answer
    /// repeats that channel, so a client that registers what it created gets its courier URL back.
    func registerToken(_ body: JSONValue, _ scope: DatabaseScope, request: RequestFacts) async throws -> JSONValue {
        guard let token = try body.optionalString("apnsToken"), !token.isEmpty else {
            throw ServerError.badRequest("tokens/register needs apnsToken, a token made by tokens/create")
        }
        if let environment = try body.optionalString("apnsEnvironment"), environment != "development", environment != "production" {
            throw ServerError.badRequest("apnsEnvironment must be development or production")
        }
        guard token.utf8.count <= 128 else { throw ServerError(.notFound, "no such notification channel") }
        let channel = try await self.store.pushToken(scope, token: token)
        return channelJSON(channel, scope, request: request)
    }

    /// `{"apnsEnvironment", "apnsToken", "webcourierURL"}` of a channel.
    func channelJSON(_ token: PushToken, _ scope: DatabaseScope, request: RequestFacts) -> JSONValue {
        // The authority the client used (a proxy's included), else the address the daemon is bound to.
        let host = request.host ?? boundAuthority ?? "127.0.0.1"
        let scheme = request.forwardedProto == "https" ? "https" : "http"
        let url = "\(scheme)://\(host)/database/1/\(scope.container)/\(scope.environment.rawValue)/courier/\(token.token)"
        return ["apnsEnvironment": .string(token.apnsEnvironment), "apnsToken": .string(token.token), "webcourierURL": .string(url)]
    }
}
