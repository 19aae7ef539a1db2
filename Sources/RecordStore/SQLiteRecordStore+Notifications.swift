import Foundation
import RecordModel
import SQLiteDB

extension SubscriptionCache {
    /// The database's subscriptions in the SQLite writer's transaction, from the cache when kept.
    func subscriptions(_ databaseID: Int64, _ connection: SQLiteConnection) throws -> [Subscription] {
        if let cached = cached(databaseID) { return cached }
        let loaded = try connection.map("SELECT definition FROM subscriptions WHERE database_id = ? ORDER BY subscription_id",
                                        [.int(databaseID)]) { try Subscription(json: try JSONValue.parse($0.blob(0))) }
        keep(loaded, for: databaseID)
        return loaded
    }
}

extension SQLiteRecordStore {
    package func notifications(databaseID: Int64, after cursor: Int64, limit: Int) throws -> [StoredNotification] {
        try database.readSync { connection in
            try connection.map("SELECT id, payload FROM notifications WHERE database_id = ? AND id > ? ORDER BY id LIMIT ?",
                               [.int(databaseID), .int(cursor), .int(Int64(limit))]) { StoredNotification(id: $0.int64(0), payload: $0.blob(1)) }
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
