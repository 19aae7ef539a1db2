import RecordModel
import SQLiteDB

// The sharing rows a zone's deletion, still the SQLite store's own transaction, removes and
// notifies. Sharing itself, and every other read and write of these rows, is the store engine's
// (StoreEngine+Sharing, StoreEngine+SharedDatabase).
extension SQLiteRecordStore {
    func deleteShareRows(zoneRowID: Int64, _ connection: SQLiteConnection) throws {
        try connection.run("DELETE FROM shares WHERE zone_id = ?", [.int(zoneRowID)])
        try connection.run("DELETE FROM share_participants WHERE zone_id = ?", [.int(zoneRowID)])
    }

    /// The accepted participants of a shared zone, to notify.
    func participantChannels(zoneRowID: Int64, _ connection: SQLiteConnection) throws -> [ParticipantChannel] {
        try connection.map(
            """
            SELECT u.record_name, p.database_id FROM share_participants p JOIN users u ON u.id = p.user_id
            WHERE p.zone_id = ? AND p.status = 'ACCEPTED' AND p.database_id IS NOT NULL
            """, [.int(zoneRowID)]) { ParticipantChannel(userRecordName: $0.text(0), databaseID: $0.int64(1)) }
    }

    /// Fires the shared-database subscriptions of the zone's accepted participants (`dbs` 3) in
    /// the change's transaction; returns the databases whose outbox grew.
    func notifyParticipants(_ changes: [CommittedChange], zone: ZoneRow, ownerScope: DatabaseScope, zoneChanged: Bool,
                            onlyDatabase: Int64? = nil, _ connection: SQLiteConnection) throws -> Set<Int64>
    {
        var touched = Set<Int64>()
        let now = clock()
        for channel in try participantChannels(zoneRowID: zone.id, connection) where onlyDatabase == nil || onlyDatabase == channel.databaseID {
            let key = ShareRules.sharedSubscriptionKey(channel.databaseID)
            let subscriptions = try subscriptionCache.subscriptions(key, connection)
            let (payloads, firedOnce) = SubscriptionRules.fire(subscriptions, changes: changes, zone: zone.name, scope: ownerScope,
                                                               zoneChanged: zoneChanged, dbs: 3)
            for (_, payload) in payloads {
                try connection.run("INSERT INTO notifications (database_id, created_at, payload) VALUES (?, ?, ?)",
                                   [.int(channel.databaseID), .int(now), .blob(payload)])
                touched.insert(channel.databaseID)
            }
            for id in firedOnce {
                try connection.run("DELETE FROM subscriptions WHERE database_id = ? AND subscription_id = ?", [.int(key), .text(id)])
            }
            if !firedOnce.isEmpty { subscriptionCache.invalidate(key) }
        }
        return touched
    }
}
