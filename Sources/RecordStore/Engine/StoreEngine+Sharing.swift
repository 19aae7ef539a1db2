import RecordModel

// Sharing's rows (`shares`, `share_participants`), read and written in the request's own
// transaction; `ShareRules` decides. A write in a shared zone locks the owner's database row before
// it checks access, as every share change does, so a removal and a write never overlap.
extension StoreEngine {
    static let userColumns = "u.id, u.name, u.record_name, u.email"

    /// Columns `userColumns` of a row, from `start`.
    func userIdentity(_ row: StoreRow, at start: Int = 0) -> UserIdentity {
        UserIdentity(id: row.int(start), name: row.text(start + 1), recordName: row.text(start + 2), email: row.optionalText(start + 3))
    }

    func user(id: Int64, _ connection: any StoreConnection) async throws -> UserIdentity? {
        try await connection.first("SELECT \(Self.userColumns) FROM users u WHERE u.id = ?", [.int(id)]).map { userIdentity($0) }
    }

    /// The users whose `column` (`email` or `record_name`) is one of `values`, in one statement, by that value.
    func users(_ column: String, in values: [String], _ connection: any StoreConnection) async throws -> [String: UserIdentity] {
        guard !values.isEmpty else { return [:] }
        let rows = try await connection.rows("SELECT \(Self.userColumns), u.\(column) FROM users u WHERE " + connection.dialect.isInJSONArray("u.\(column)"),
                                             [.text(JSONArgument.array(values))])
        return Dictionary(rows.map { ($0.text(4), userIdentity($0)) }, uniquingKeysWith: { first, _ in first })
    }

    // MARK: The access check

    /// The shared zone as the caller may use it: one indexed join (owner, its database, the live
    /// zone, the caller's accepted participant row). Anything missing is the same `ZONE_NOT_FOUND`.
    /// `lockOwner` first locks the owner's database row (writers).
    package func sharedAccess(_ scope: DatabaseScope, _ zone: ZoneID, lockOwner: Bool = false, _ connection: any StoreConnection) async throws
        -> SharedZoneAccess
    {
        let owner = try ShareRules.requireOwner(zone)
        let dialect = connection.dialect
        let place: [SQLValue] = [.text(scope.container), .text(scope.environment.rawValue)]
        if lockOwner, !dialect.forUpdate.isEmpty {
            try await connection.execute(
                "SELECT 1 FROM databases d JOIN users u ON u.id = d.user_id WHERE d.container = ? AND d.environment = ? AND u.record_name = ?"
                    + dialect.forUpdate(of: "d"), place + [.text(owner)])
        }
        let row = try await connection.first(
            """
            SELECT z.id, z.name, z.seq, z.purged_seq, d.id, \(Self.userColumns), p.permission
            FROM users u JOIN databases d ON d.user_id = u.id AND d.container = ? AND d.environment = ?
            JOIN zones z ON z.database_id = d.id AND z.name = ? AND z.deleted = 0
            JOIN share_participants p ON p.zone_id = z.id AND p.user_id = ? AND p.status = 'ACCEPTED'
            WHERE u.record_name = ?
            """ + (lockOwner ? dialect.forUpdate(of: "z") : ""),
            place + [.text(zone.zoneName), .int(scope.userID), .text(owner)])
        guard let row else { throw ShareRules.zoneNotFound(zone) }
        return SharedZoneAccess(zone: ZoneRow(id: row.int(0), name: row.text(1), seq: row.int(2), purgedSeq: row.int(3)),
                                ownerDatabaseID: row.int(4), owner: userIdentity(row, at: 5),
                                permission: SharePermission(rawValue: row.text(9)) ?? .readOnly)
    }

    /// The zone a request addresses and how to name it: the caller's own (private or public), or
    /// a shared zone it was let into.
    package struct AddressedZone: Sendable {
        package var databaseID: Int64
        package var row: ZoneRow
        package var zoneID: ZoneID
        package var access: SharedZoneAccess?
    }

    /// `forUpdate` locks the database's row and the zone's (writers, see `lockDatabase`).
    package func addressedZone(_ scope: DatabaseScope, _ zone: ZoneID, privateDatabaseID: Int64, forUpdate: Bool = false,
                       _ connection: any StoreConnection) async throws -> AddressedZone
    {
        if scope.kind == .shared {
            let access = try await sharedAccess(scope, zone, lockOwner: forUpdate, connection)
            return AddressedZone(databaseID: access.ownerDatabaseID, row: access.zone, zoneID: access.zoneID, access: access)
        }
        if forUpdate { try await lockDatabase(privateDatabaseID, connection) }
        let row = try await requireZone(privateDatabaseID, zone, forUpdate: forUpdate, connection)
        return AddressedZone(databaseID: privateDatabaseID, row: row, zoneID: zoneID(row.name, scope), access: nil)
    }

    // MARK: Share rows

    func loadShare(zoneRowID: Int64, _ connection: any StoreConnection) async throws -> ShareRow? {
        try await connection.first(
            """
            SELECT s.short_guid, z.name, \(Self.userColumns), r.fields FROM shares s JOIN zones z ON z.id = s.zone_id
            JOIN users u ON u.id = s.owner_user_id LEFT JOIN records r ON r.zone_id = s.zone_id AND r.name = ? AND r.deleted = 0
            WHERE s.zone_id = ?
            """, [.text(ShareRules.recordName), .int(zoneRowID)]
        ).map { row in
            ShareRow(zoneRowID: zoneRowID, zoneName: row.text(1), shortGUID: row.text(0), owner: userIdentity(row, at: 2),
                     title: row.isNull(6) ? nil : ShareRules.title(fieldsJSON: row.blob(6)))
        }
    }

    func loadParticipants(zoneRowID: Int64, _ connection: any StoreConnection) async throws -> [ParticipantRow] {
        try await connection.rows(
            """
            SELECT p.participant_id, p.email, p.permission, p.status, \(Self.userColumns) FROM share_participants p
            LEFT JOIN users u ON u.id = p.user_id WHERE p.zone_id = ? ORDER BY p.participant_id
            """, [.int(zoneRowID)]
        ).map { row in
            ParticipantRow(participantID: row.text(0), user: row.isNull(4) ? nil : userIdentity(row, at: 4), email: row.optionalText(1),
                           permission: SharePermission(rawValue: row.text(2)) ?? .readOnly,
                           status: ShareAcceptance(rawValue: row.text(3)) ?? .invited)
        }
    }

    /// Gives the share record its sharing members, as `caller` sees them (other records pass as they are).
    package func attachShare(_ record: StoredRecord, zoneRowID: Int64, caller: String, _ connection: any StoreConnection) async throws
        -> StoredRecord
    {
        guard record.recordName == ShareRules.recordName, let share = try await loadShare(zoneRowID: zoneRowID, connection) else { return record }
        var copy = record
        copy.shareJSON = ShareRules.shareJSON(share, participants: try await loadParticipants(zoneRowID: zoneRowID, connection),
                                              callerRecordName: caller)
        return copy
    }

    package func deleteShareRows(zoneRowID: Int64, _ connection: any StoreConnection) async throws {
        try await connection.execute("DELETE FROM shares WHERE zone_id = ?", [.int(zoneRowID)])
        try await connection.execute("DELETE FROM share_participants WHERE zone_id = ?", [.int(zoneRowID)])
    }

    /// A participant leaves: its row goes, in the request's transaction.
    func leaveShare(_ scope: DatabaseScope, zoneRowID: Int64, _ connection: any StoreConnection) async throws {
        try await connection.execute("DELETE FROM share_participants WHERE zone_id = ? AND user_id = ?", [.int(zoneRowID), .int(scope.userID)])
    }

    /// Writes the participant rows the owner's share record asks for: who stays keeps its
    /// acceptance, who is new is invited, who is missing loses access now.
    func writeParticipants(_ requested: [RequestedParticipant], owner: UserIdentity, zoneRowID: Int64, _ connection: any StoreConnection)
        async throws
    {
        let byName = try await users("record_name", in: requested.compactMap(\.userRecordName), connection)
        let byEmail = try await users("email", in: requested.compactMap(\.email), connection)
        let previous = try await loadParticipants(zoneRowID: zoneRowID, connection)
        let merged = try ShareRules.merge(existing: previous, requested: requested, owner: owner, userByRecordName: byName, userByEmail: byEmail)
        let kept = Set(merged.map(\.participantID))
        let gone = previous.map(\.participantID).filter { !kept.contains($0) }
        if !gone.isEmpty {
            try await connection.execute("DELETE FROM share_participants WHERE zone_id = ? AND " + connection.dialect.isInJSONArray("participant_id"),
                                         [.int(zoneRowID), .text(JSONArgument.array(gone))])
        }
        let columns = [StoreColumn("zone_id", .integer), StoreColumn("participant_id", .text), StoreColumn("user_id", .integer),
                       StoreColumn("email", .text), StoreColumn("permission", .text), StoreColumn("status", .text)]
        let rows: [[SQLValue]] = merged.map { row in
            [.int(zoneRowID), .text(row.participantID), row.user.map { .int($0.id) } ?? .null, row.email.map { .text($0) } ?? .null,
             .text(row.permission.rawValue), .text(row.status.rawValue)]
        }
        try await connection.insertRows(into: "share_participants", columns: columns, rows: rows,
                                        suffix: connection.dialect.upsert(conflict: ["zone_id", "participant_id"],
                                                                          update: ["user_id", "email", "permission"]))
    }

    /// Fires the shared-database subscriptions (`dbs` 3) of the zone's accepted participants in the
    /// change's transaction, announcing each outbox that grew; returns those databases.
    package func notifyParticipants(_ changes: [CommittedChange], zone: ZoneRow, ownerScope: DatabaseScope, zoneChanged: Bool,
                            onlyDatabase: Int64? = nil, _ connection: any StoreConnection) async throws -> Set<Int64>
    {
        var touched = Set<Int64>()
        // Ascending database ids: two writers notifying the same participants lock their rows in one order.
        let channels = try await connection.rows(
            """
            SELECT p.database_id FROM share_participants p
            WHERE p.zone_id = ? AND p.status = 'ACCEPTED' AND p.database_id IS NOT NULL ORDER BY p.database_id
            """, [.int(zone.id)]
        ).map { $0.int(0) }
        for databaseID in channels where onlyDatabase == nil || onlyDatabase == databaseID {
            let key = ShareRules.sharedSubscriptionKey(databaseID)
            let (payloads, firedOnce) = SubscriptionRules.fire(try await subscriptions(key, connection), changes: changes, zone: zone.name,
                                                               scope: ownerScope, zoneChanged: zoneChanged, dbs: 3)
            if !payloads.isEmpty {
                try await writeNotifications(payloads.map(\.payload), databaseID: databaseID, connection)
                try await driver.announceCommit(of: databaseID, connection)
                touched.insert(databaseID)
            }
            if !firedOnce.isEmpty {
                try await connection.execute("DELETE FROM subscriptions WHERE database_id = ? AND " + connection.dialect.isInJSONArray("subscription_id"),
                                             [.int(key), .text(JSONArgument.array(firedOnce))])
                subscriptionCache?.invalidate(key)
            }
        }
        return touched
    }
}
