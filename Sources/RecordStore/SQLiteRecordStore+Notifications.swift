import Foundation
import RecordModel
import SQLiteDB
import Synchronization

/// Each database's subscriptions, read once and kept until they change: matching runs inside
/// every write transaction, so it must not cost a query.
package final class SubscriptionCache: Sendable {
    private let byDatabase = Mutex<[Int64: [Subscription]]>([:])

    func subscriptions(_ databaseID: Int64, _ connection: SQLiteConnection) throws -> [Subscription] {
        if let cached = cached(databaseID) { return cached }
        let loaded = try connection.map("SELECT definition FROM subscriptions WHERE database_id = ? ORDER BY subscription_id",
                                        [.int(databaseID)]) { try Subscription(json: try JSONValue.parse($0.blob(0))) }
        keep(loaded, for: databaseID)
        return loaded
    }

    func cached(_ databaseID: Int64) -> [Subscription]? { byDatabase.withLock { $0[databaseID] } }

    func keep(_ subscriptions: [Subscription], for databaseID: Int64) { byDatabase.withLock { $0[databaseID] = subscriptions } }

    func invalidate(_ databaseID: Int64) {
        byDatabase.withLock { $0[databaseID] = nil }
    }

    func invalidateAll() { byDatabase.withLock { $0.removeAll() } }
}

extension SQLiteRecordStore {
    package static let maximumSubscriptions = StoreLimits.maximumSubscriptions

    package func modifySubscriptions(_ scope: DatabaseScope, operations: [SubscriptionOperation]) throws
        -> [Result<Subscription?, ServerError>]
    {
        guard operations.count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) subscription operations per request")
        }
        let recipient = try publicSubscriptionRecipient(scope)
        let operations = PublicSubscriptions.stored(operations, recipient: recipient)
        let results = try writeTransaction(scope) { connection, ownDatabaseID in
            // A user's shared-database subscriptions live beside its private ones, under the negated id.
            let databaseID = scope.kind == .shared ? ShareRules.sharedSubscriptionKey(ownDatabaseID) : ownDatabaseID
            defer { subscriptionCache.invalidate(databaseID) }
            return try operations.map { operation -> Result<Subscription?, ServerError> in
                switch operation {
                case .save(let subscription):
                    let zoneExists = try subscription.zoneID.map { zone in
                        if scope.kind != .shared { return try liveZone(databaseID, name: zone.zoneName, connection) != nil }
                        // A shared zone the caller may not use is one that does not exist.
                        guard zone.ownerRecordName != nil else { return false }
                        return (try? sharedAccess(scope, zone, connection)) != nil
                    } ?? true
                    let others = try connection.scalarInt(
                        "SELECT COUNT(*) FROM subscriptions WHERE database_id = ? AND subscription_id != ? AND subscription_id LIKE ?",
                        [.int(databaseID), .text(subscription.subscriptionID), .text(PublicSubscriptions.ownPattern(recipient: recipient))]) ?? 0
                    if let refusal = SubscriptionRules.refusal(subscription, zoneExists: zoneExists, otherCount: Int(others)) {
                        return .failure(refusal)
                    }
                    try connection.run("INSERT OR REPLACE INTO subscriptions (database_id, subscription_id, definition) VALUES (?, ?, ?)",
                                       [.int(databaseID), .text(subscription.subscriptionID), .blob(subscription.json.serialized())])
                    return .success(subscription)
                case .delete(let id):
                    let removed = try connection.run("DELETE FROM subscriptions WHERE database_id = ? AND subscription_id = ?",
                                                     [.int(databaseID), .text(id)])
                    guard removed > 0 else { return .failure(SubscriptionRules.notFound(id)) }
                    return .success(nil)
                }
            }
        }
        return PublicSubscriptions.answered(results, recipient: recipient)
    }

    /// For the public database, the caller's private database (where its subscriptions deliver).
    func publicSubscriptionRecipient(_ scope: DatabaseScope) throws -> Int64? {
        guard scope.database == .public else { return nil }
        guard !scope.isAnonymous else { throw ServerError(.authenticationRequired, "subscriptions need a user: send a web auth token") }
        return try databaseID(scope.callersPrivateDatabase)
    }

    package func listSubscriptions(_ scope: DatabaseScope) throws -> [Subscription] {
        let recipient = try publicSubscriptionRecipient(scope)
        let stored = try database.readSync { connection in
            let ownDatabaseID = try databaseID(scope)
            let databaseID = scope.kind == .shared ? ShareRules.sharedSubscriptionKey(ownDatabaseID) : ownDatabaseID
            return try connection.map("SELECT definition FROM subscriptions WHERE database_id = ? ORDER BY subscription_id",
                                      [.int(databaseID)]) { try Subscription(json: try JSONValue.parse($0.blob(0))) }
        }
        return PublicSubscriptions.visible(stored, recipient: recipient)
    }

    package func createPushToken(_ scope: DatabaseScope, apnsEnvironment: String, authTokenHash: String? = nil) throws -> PushToken {
        try CredentialRules.validateAPIEnvironment(apnsEnvironment)
        return try writeTransaction(scope) { connection, databaseID in
            let start = try connection.scalarInt("SELECT MAX(id) FROM notifications WHERE database_id = ?", [.int(databaseID)]) ?? 0
            let token = RandomToken.hex(bytes: 32)
            try connection.run(
                // Bound only to a hash that is a user token (a server key's signature is not).
                """
                INSERT INTO push_tokens (token, database_id, user_id, apns_environment, start_cursor, created_at, auth_token_hash)
                VALUES (?, ?, ?, ?, ?, ?, (SELECT token_hash FROM auth_tokens WHERE token_hash = ? AND user_id = ?))
                """,
                [.text(token), .int(databaseID), .int(scope.userID), .text(apnsEnvironment), .int(start), .int(clock()),
                 authTokenHash.map { .text($0) } ?? .null, .int(scope.userID)])
            return PushToken(token: token, apnsEnvironment: apnsEnvironment, databaseID: databaseID, startCursor: start)
        }
    }

    package func pushToken(_ scope: DatabaseScope, token: String) throws -> PushToken {
        try database.readSync { connection in
            let databaseID = try databaseID(scope)
            guard let row = try connection.first(
                "SELECT database_id, user_id, apns_environment, start_cursor FROM push_tokens WHERE token = ?", [.text(token)], {
                    (database: $0.int64(0), user: $0.int64(1), environment: $0.text(2), start: $0.int64(3))
                })
            else { throw ServerError(.notFound, "no such notification channel") }
            guard row.user == scope.userID, row.database == databaseID else {
                throw ServerError(.accessDenied, "this notification channel belongs to another user or container")
            }
            return PushToken(token: token, apnsEnvironment: row.environment, databaseID: row.database, startCursor: row.start)
        }
    }

    package func notifications(databaseID: Int64, after cursor: Int64, limit: Int) throws -> [StoredNotification] {
        try database.readSync { connection in
            try connection.map("SELECT id, payload FROM notifications WHERE database_id = ? AND id > ? ORDER BY id LIMIT ?",
                               [.int(databaseID), .int(cursor), .int(Int64(limit))]) { StoredNotification(id: $0.int64(0), payload: $0.blob(1)) }
        }
    }

    package func purgeNotifications(olderThanMilliseconds age: Int64) throws -> Int {
        try database.writeSync { connection in
            try connection.run("DELETE FROM notifications WHERE created_at < ?", [.int(clock() - age)])
        }
    }

    /// Matches the changes of one transaction against the database's subscriptions and writes the
    /// notifications they fire, in the same transaction: a committed change always notifies and a
    /// rolled-back one never does. `zoneChanged` marks a zone created or deleted (database
    /// subscriptions fire even when no record changed).
    /// Returns the other databases that received notifications (public-database subscribers).
    @discardableResult
    func recordNotifications(for changes: [CommittedChange], zone zoneName: String, databaseID: Int64, scope: DatabaseScope,
                             zoneChanged: Bool, _ connection: SQLiteConnection) throws -> Set<Int64>
    {
        let subscriptions = try subscriptionCache.subscriptions(databaseID, connection)
        let (payloads, firedOnce) = SubscriptionRules.fire(subscriptions, changes: changes, zone: zoneName, scope: scope, zoneChanged: zoneChanged)
        let now = clock()
        var recipients = Set<Int64>()
        for (recipient, payload) in payloads {
            if let recipient { recipients.insert(recipient) }
            try connection.run("INSERT INTO notifications (database_id, created_at, payload) VALUES (?, ?, ?)",
                               [.int(recipient ?? databaseID), .int(now), .blob(payload)])
        }
        for id in firedOnce {
            try connection.run("DELETE FROM subscriptions WHERE database_id = ? AND subscription_id = ?", [.int(databaseID), .text(id)])
        }
        if !firedOnce.isEmpty { subscriptionCache.invalidate(databaseID) }
        return recipients
    }
}
