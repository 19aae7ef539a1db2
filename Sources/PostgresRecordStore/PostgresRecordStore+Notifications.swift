import Foundation
import PostgresNIO
import RecordModel
import RecordStore

extension PostgresRecordStore {
    /// The database's subscriptions, in the caller's transaction (sharing's participants' fan-out).
    func subscriptions(_ databaseID: Int64, _ connection: PostgresConnection) async throws -> [Subscription] {
        try await connection.query(
            "SELECT definition FROM subscriptions WHERE database_id = \(databaseID) ORDER BY subscription_id", logger: logger
        ).collect().map { try Subscription(json: try JSONValue.parse(Array(try $0.decode(String.self).utf8))) }
    }

    package func notifications(databaseID: Int64, after cursor: Int64, limit: Int) async throws -> [StoredNotification] {
        try await read { connection in
            try await connection.query(
                """
                SELECT id, payload FROM notifications WHERE database_id = \(databaseID) AND id > \(cursor) ORDER BY id LIMIT \(Int64(limit))
                """, logger: self.logger
            ).collect().map {
                let (id, payload) = try $0.decode((Int64, String).self)
                return StoredNotification(id: id, payload: Array(payload.utf8))
            }
        }
    }

    /// Writes the notifications the transaction's changes fire (`SubscriptionRules.fire`), in the
    /// same transaction. Their ids come from the database's `note_seq`, taken under the database's
    /// row lock the caller holds, so cursors commit in order.
    ///
    /// Public-database subscriptions deliver to their subscribers' private databases: those rows
    /// are locked after the public one (always in that order, so writers cannot deadlock), and
    /// announced here; the caller announces its own database. Returns the subscribers' databases.
    @discardableResult
    func recordNotifications(for changes: [CommittedChange], zone zoneName: String, databaseID: Int64, scope: DatabaseScope,
                             zoneChanged: Bool, _ connection: PostgresConnection) async throws -> Set<Int64>
    {
        try await engine.recordNotifications(for: changes, zone: zoneName, databaseID: databaseID, scope: scope, zoneChanged: zoneChanged,
                                             PostgresStoreConnection(connection: connection, logger: logger))
    }

    /// Appends payloads to a database's outbox, numbered by its `note_seq` (the UPDATE takes the
    /// row's lock); false when there was nothing to write.
    @discardableResult
    func writeNotifications(_ payloads: [[UInt8]], databaseID: Int64, _ connection: PostgresConnection) async throws -> Bool {
        guard !payloads.isEmpty else { return false }
        let count = Int64(payloads.count)
        let last = try await connection.query(
            "UPDATE databases SET note_seq = note_seq + \(count) WHERE id = \(databaseID) RETURNING note_seq", logger: logger
        ).collect().first?.decode(Int64.self) ?? count
        let now = clock()
        var id = last - count
        for payload in payloads {
            id += 1
            try await connection.query(
                "INSERT INTO notifications (database_id, id, created_at, payload) VALUES (\(databaseID), \(id), \(now), \(String(decoding: payload, as: UTF8.self)))",
                logger: logger)
        }
        return true
    }
}
