import RecordModel

/// A store whose subscriptions and notification channels are the engine's scripts: both
/// backends conform, so their `RecordStorage` methods for them are these.
package protocol EngineSubscriptionStorage {
    var engine: StoreEngine { get }
}

extension EngineSubscriptionStorage {
    package func modifySubscriptions(_ scope: DatabaseScope, operations: [SubscriptionOperation]) async throws
        -> [Result<Subscription?, ServerError>]
    {
        try await engine.modifySubscriptions(scope, operations: operations)
    }

    package func listSubscriptions(_ scope: DatabaseScope) async throws -> [Subscription] { try await engine.listSubscriptions(scope) }

    package func createPushToken(_ scope: DatabaseScope, apnsEnvironment: String, authTokenHash: String?) async throws -> PushToken {
        try await engine.createPushToken(scope, apnsEnvironment: apnsEnvironment, authTokenHash: authTokenHash)
    }

    package func pushToken(_ scope: DatabaseScope, token: String) async throws -> PushToken { try await engine.pushToken(scope, token: token) }
}
