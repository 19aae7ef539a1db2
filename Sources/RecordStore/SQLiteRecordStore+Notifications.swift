import Foundation
import RecordModel
import SQLiteDB

/// Each database's subscriptions, read once and kept until they change: matching runs inside
/// every write transaction, so it must not cost a query.
final class SubscriptionCache: @unchecked Sendable {
    private let lock = NSLock()
    private var byDatabase: [Int64: [Subscription]] = [:]

    func subscriptions(_ databaseID: Int64, _ connection: SQLiteConnection) throws -> [Subscription] {
        lock.lock()
        if let cached = byDatabase[databaseID] {
            lock.unlock()
            return cached
        }
        lock.unlock()
        let loaded = try connection.map("SELECT definition FROM subscriptions WHERE database_id = ? ORDER BY subscription_id",
                                        [.int(databaseID)]) { try Subscription(json: try JSONValue.parse($0.blob(0))) }
        lock.lock()
        byDatabase[databaseID] = loaded
        lock.unlock()
        return loaded
    }

    func invalidate(_ databaseID: Int64) {
        lock.lock()
        byDatabase[databaseID] = nil
        lock.unlock()
    }
}

extension SQLiteRecordStore {
    public static let maximumSubscriptions = StoreLimits.maximumSubscriptions

    public func modifySubscriptions(_ scope: DatabaseScope, operations: [SubscriptionOperation]) throws
        -> [Result<Subscription?, ServerError>]
    {
        guard operations.count <= SQLiteRecordStore.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(SQLiteRecordStore.maximumOperations) subscription operations per request")
        }
        return try writeTransaction(scope) { connection, privateDatabaseID in
            // A user's shared-database subscriptions live beside its private ones, under the negated id.
            let databaseID = scope.kind == .shared ? ShareRules.sharedSubscriptionKey(privateDatabaseID) : privateDatabaseID
            defer { subscriptionCache.invalidate(databaseID) }
            return try operations.map { operation -> Result<Subscription?, ServerError> in
                switch operation {
                case .save(let subscription):
                    let zoneExists = try subscription.zoneID.map { zone in
                        if scope.kind == .private { return try liveZone(databaseID, name: zone.zoneName, connection) != nil }
                        // A shared zone the caller may not use is one that does not exist.
                        guard zone.ownerRecordName != nil else { return false }
                        return (try? sharedAccess(scope, zone, connection)) != nil
                    } ?? true
                    let others = try connection.scalarInt(
                        "SELECT COUNT(*) FROM subscriptions WHERE database_id = ? AND subscription_id != ?",
                        [.int(databaseID), .text(subscription.subscriptionID)]) ?? 0
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
    }

    public func listSubscriptions(_ scope: DatabaseScope) throws -> [Subscription] {
        try database.readSync { connection in
            let privateDatabaseID = try databaseID(scope)
            let databaseID = scope.kind == .shared ? ShareRules.sharedSubscriptionKey(privateDatabaseID) : privateDatabaseID
            return try connection.map("SELECT definition FROM subscriptions WHERE database_id = ? ORDER BY subscription_id",
                                      [.int(databaseID)]) { try Subscription(json: try JSONValue.parse($0.blob(0))) }
        }
    }

    public func createPushToken(_ scope: DatabaseScope, apnsEnvironment: String) throws -> PushToken {
        try CredentialRules.validateAPIEnvironment(apnsEnvironment)
        return try writeTransaction(scope) { connection, databaseID in
            let start = try connection.scalarInt("SELECT MAX(id) FROM notifications WHERE database_id = ?", [.int(databaseID)]) ?? 0
            let token = RandomToken.hex(bytes: 32)
            try connection.run(
                "INSERT INTO push_tokens (token, database_id, user_id, apns_environment, start_cursor, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                [.text(token), .int(databaseID), .int(scope.userID), .text(apnsEnvironment), .int(start), .int(clock())])
            return PushToken(token: token, apnsEnvironment: apnsEnvironment, databaseID: databaseID, startCursor: start)
        }
    }

    public func pushToken(_ scope: DatabaseScope, token: String) throws -> PushToken {
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

    public func notifications(databaseID: Int64, after cursor: Int64, limit: Int) throws -> [StoredNotification] {
        try database.readSync { connection in
            try connection.map("SELECT id, payload FROM notifications WHERE database_id = ? AND id > ? ORDER BY id LIMIT ?",
                               [.int(databaseID), .int(cursor), .int(Int64(limit))]) { StoredNotification(id: $0.int64(0), payload: $0.blob(1)) }
        }
    }

    public func purgeNotifications(olderThanMilliseconds age: Int64) throws -> Int {
        try database.writeSync { connection in
            try connection.run("DELETE FROM notifications WHERE created_at < ?", [.int(clock() - age)])
        }
    }

    /// Matches the changes of one transaction against the database's subscriptions and writes the
    /// notifications they fire, in the same transaction: a committed change always notifies and a
    /// rolled-back one never does. `zoneChanged` marks a zone created or deleted (database
    /// subscriptions fire even when no record changed).
    func recordNotifications(for changes: [CommittedChange], zone zoneName: String, databaseID: Int64, scope: DatabaseScope,
                             zoneChanged: Bool, _ connection: SQLiteConnection) throws
    {
        let subscriptions = try subscriptionCache.subscriptions(databaseID, connection)
        let (payloads, firedOnce) = SubscriptionRules.fire(subscriptions, changes: changes, zone: zoneName, scope: scope, zoneChanged: zoneChanged)
        let now = clock()
        for payload in payloads {
            try connection.run("INSERT INTO notifications (database_id, created_at, payload) VALUES (?, ?, ?)",
                               [.int(databaseID), .int(now), .blob(payload)])
        }
        for id in firedOnce {
            try connection.run("DELETE FROM subscriptions WHERE database_id = ? AND subscription_id = ?", [.int(databaseID), .text(id)])
        }
        if !firedOnce.isEmpty { subscriptionCache.invalidate(databaseID) }
    }
}
