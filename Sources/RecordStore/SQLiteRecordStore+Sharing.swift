import RecordModel
import SQLiteDB

// The reads of sharing's rows that the SQLite store's own transactions still make (lookups,
// queries and feeds in a shared zone, a zone's deletion). Sharing itself, and everything that
// writes these rows, is the store engine's (StoreEngine+Sharing, StoreEngine+SharedDatabase).
extension SQLiteRecordStore {
    static let userColumns = "u.id, u.name, u.record_name, u.email"

    func userIdentity(_ row: SQLiteStatement, at start: Int32 = 0) -> UserIdentity {
        UserIdentity(id: row.int64(start), name: row.text(start + 1), recordName: row.text(start + 2), email: row.optionalText(start + 3))
    }

    // MARK: The access check

    /// The shared zone `zone` as `scope`'s user may use it: one indexed join (owner, its database,
    /// the live zone, the caller's accepted participant row), run in the caller's transaction.
    /// Anything missing — no such owner, zone, share, or an invitation not accepted, or a removed
    /// participant — is the same `ZONE_NOT_FOUND`.
    func sharedAccess(_ scope: DatabaseScope, _ zone: ZoneID, _ connection: SQLiteConnection) throws -> SharedZoneAccess {
        let owner = try ShareRules.requireOwner(zone)
        let access = try connection.first(
            """
            SELECT z.id, z.name, z.seq, z.purged_seq, d.id, \(Self.userColumns), p.permission
            FROM users u JOIN databases d ON d.user_id = u.id AND d.container = ? AND d.environment = ?
            JOIN zones z ON z.database_id = d.id AND z.name = ? AND z.deleted = 0
            JOIN share_participants p ON p.zone_id = z.id AND p.user_id = ? AND p.status = 'ACCEPTED'
            WHERE u.record_name = ?
            """,
            [.text(scope.container), .text(scope.environment.rawValue), .text(zone.zoneName), .int(scope.userID), .text(owner)]
        ) { row in
            SharedZoneAccess(zone: ZoneRow(id: row.int64(0), name: row.text(1), seq: row.int64(2), purgedSeq: row.int64(3)),
                             ownerDatabaseID: row.int64(4), owner: userIdentity(row, at: 5),
                             permission: SharePermission(rawValue: row.text(9)) ?? .readOnly)
        }
        guard let access else { throw ShareRules.zoneNotFound(zone) }
        return access
    }

    /// The zone a request addresses and how to name it: the caller's own (private), or a shared
    /// zone it was let into.
    struct AddressedZone {
        var databaseID: Int64
        var row: ZoneRow
        var zoneID: ZoneID
        var access: SharedZoneAccess?
    }

    func addressedZone(_ scope: DatabaseScope, _ zone: ZoneID, privateDatabaseID: Int64, _ connection: SQLiteConnection) throws -> AddressedZone {
        if scope.kind == .shared {
            let access = try sharedAccess(scope, zone, connection)
            return AddressedZone(databaseID: access.ownerDatabaseID, row: access.zone, zoneID: access.zoneID, access: access)
        }
        let row = try requireZone(privateDatabaseID, zone, connection)
        return AddressedZone(databaseID: privateDatabaseID, row: row, zoneID: zoneID(row.name, scope), access: nil)
    }

    // MARK: Share rows

    func loadShare(zoneRowID: Int64, _ connection: SQLiteConnection) throws -> ShareRow? {
        try connection.first(
            """
            SELECT s.short_guid, z.name, \(Self.userColumns), r.fields FROM shares s JOIN zones z ON z.id = s.zone_id
            JOIN users u ON u.id = s.owner_user_id LEFT JOIN records r ON r.zone_id = s.zone_id AND r.name = ? AND r.deleted = 0
            WHERE s.zone_id = ?
            """, [.text(ShareRules.recordName), .int(zoneRowID)]
        ) { row in
            ShareRow(zoneRowID: zoneRowID, zoneName: row.text(1), shortGUID: row.text(0), owner: userIdentity(row, at: 2),
                     title: row.isNull(6) ? nil : ShareRules.title(fieldsJSON: row.blob(6)))
        }
    }

    func loadParticipants(zoneRowID: Int64, _ connection: SQLiteConnection) throws -> [ParticipantRow] {
        try connection.map(
            """
            SELECT p.participant_id, p.email, p.permission, p.status, \(Self.userColumns) FROM share_participants p
            LEFT JOIN users u ON u.id = p.user_id WHERE p.zone_id = ? ORDER BY p.participant_id
            """, [.int(zoneRowID)]
        ) { row in
            ParticipantRow(participantID: row.text(0), user: row.isNull(4) ? nil : userIdentity(row, at: 4), email: row.optionalText(1),
                           permission: SharePermission(rawValue: row.text(2)) ?? .readOnly,
                           status: ShareAcceptance(rawValue: row.text(3)) ?? .invited)
        }
    }

    /// Gives the share record among `records` its sharing members, as `caller` sees them.
    func attachShare(_ record: StoredRecord, zoneRowID: Int64, caller: String, _ connection: SQLiteConnection) throws -> StoredRecord {
        guard record.recordName == ShareRules.recordName, let share = try loadShare(zoneRowID: zoneRowID, connection) else { return record }
        var copy = record
        copy.shareJSON = ShareRules.shareJSON(share, participants: try loadParticipants(zoneRowID: zoneRowID, connection), callerRecordName: caller)
        return copy
    }

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
