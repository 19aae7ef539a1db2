import RecordModel
import SQLiteDB

// Sharing on the SQLite backend: the rows of `shares` and `share_participants`,
// read and written in the request's own transaction; the rules are ShareRules'.
extension SQLiteRecordStore {
    static let userColumns = "u.id, u.name, u.record_name, u.email"

    func userIdentity(_ row: SQLiteStatement, at start: Int32 = 0) -> UserIdentity {
        UserIdentity(id: row.int64(start), name: row.text(start + 1), recordName: row.text(start + 2), email: row.optionalText(start + 3))
    }

    // MARK: Users

    package func discoverUsers(emails: [String], recordNames: [String]) throws -> [UserIdentity] {
        try database.readSync { connection in
            var found: [UserIdentity] = []
            for email in emails {
                if let user = try connection.first("SELECT \(Self.userColumns) FROM users u WHERE u.email = ?", [.text(email)], { userIdentity($0) }) {
                    found.append(user)
                }
            }
            for name in recordNames {
                if let user = try connection.first("SELECT \(Self.userColumns) FROM users u WHERE u.record_name = ?", [.text(name)], { userIdentity($0) }) {
                    found.append(user)
                }
            }
            return found
        }
    }

    func userIdentity(id: Int64, _ connection: SQLiteConnection) throws -> UserIdentity? {
        try connection.first("SELECT \(Self.userColumns) FROM users u WHERE u.id = ?", [.int(id)]) { userIdentity($0) }
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

    /// The private database id of a request's user: its shared database's subscriptions and its
    /// notification outbox hang off it.
    func callerDatabaseID(_ scope: DatabaseScope) throws -> Int64 { try databaseID(scope.privateScope) }

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

    /// The owner saves the share record: writes the record (its title), then the participant
    /// rows (who stays keeps its acceptance, who is new is invited, who is missing loses access now).
    func saveShare(_ operation: RecordOperation, _ transaction: inout ModifyTransaction, _ connection: SQLiteConnection) throws
        -> RecordOperationResult
    {
        let name = ShareRules.recordName
        let zoneRowID = transaction.zone.id
        guard transaction.zone.name != ZoneID.defaultZoneName else {
            throw ServerError.badRequest("_defaultZone cannot be shared; share a zone of your own")
        }
        let existing = try loadRecord(zoneRowID, name, connection)
        let live = existing.flatMap { $0.deleted ? nil : $0 }
        if operation.type.isDelete {
            guard live != nil else {
                if operation.type == .forceDelete { return .deleted(recordName: name) }
                throw ServerError(.notFound, "record '\(name)' does not exist")
            }
            if operation.type == .delete, operation.record["recordChangeTag"]?.stringValue != live?.tag {
                var error = ServerError(.conflict, "record '\(name)' was changed since the change tag sent")
                error.serverRecord = live!.stored(name, zoneID: transaction.zoneID).json()
                throw error
            }
            try deleteCascading(name, &transaction, connection)
            try deleteShareRows(zoneRowID: zoneRowID, connection)
            return .deleted(recordName: name)
        }
        switch operation.type {
        case .create where live != nil: throw ServerError(.exists, "record '\(name)' already exists")
        case .update, .replace:
            guard let live else { throw ServerError(.notFound, "record '\(name)' does not exist") }
            guard operation.record["recordChangeTag"]?.stringValue == live.tag else {
                var error = ServerError(.conflict, "record '\(name)' was changed since the change tag sent")
                error.serverRecord = live.stored(name, zoneID: transaction.zoneID).json()
                throw error
            }
        default: break
        }
        let (requested, fieldsJSON) = try ShareRules.parseShareRecord(operation.record, isNew: live == nil)
        guard let owner = try userIdentity(id: transaction.scope.userID, connection) else { throw ServerError(.internalError, "owner missing") }
        if live == nil {
            try connection.run("INSERT OR REPLACE INTO shares (zone_id, short_guid, owner_user_id) VALUES (?, ?, ?)",
                               [.int(zoneRowID), .text(ShareRules.newShortGUID()), .int(owner.id)])
        }
        if let requested {
            var byName: [String: UserIdentity] = [:]
            var byEmail: [String: UserIdentity] = [:]
            for wanted in requested {
                if let recordName = wanted.userRecordName,
                    let user = try connection.first("SELECT \(Self.userColumns) FROM users u WHERE u.record_name = ?", [.text(recordName)], { userIdentity($0) }) {
                    byName[recordName] = user
                }
                if let email = wanted.email,
                    let user = try connection.first("SELECT \(Self.userColumns) FROM users u WHERE u.email = ?", [.text(email)], { userIdentity($0) }) {
                    byEmail[email] = user
                }
            }
            let previous = try loadParticipants(zoneRowID: zoneRowID, connection)
            let merged = try ShareRules.merge(existing: previous, requested: requested, owner: owner, userByRecordName: byName, userByEmail: byEmail)
            let kept = Set(merged.map(\.participantID))
            for row in previous where !kept.contains(row.participantID) {
                try connection.run("DELETE FROM share_participants WHERE zone_id = ? AND participant_id = ?", [.int(zoneRowID), .text(row.participantID)])
            }
            for row in merged {
                let updated = try connection.run(
                    "UPDATE share_participants SET user_id = ?, email = ?, permission = ? WHERE zone_id = ? AND participant_id = ?",
                    [row.user.map { .int($0.id) } ?? .null, row.email.map { .text($0) } ?? .null, .text(row.permission.rawValue),
                     .int(zoneRowID), .text(row.participantID)])
                if updated == 0 {
                    try connection.run(
                        """
                        INSERT INTO share_participants (zone_id, participant_id, user_id, email, permission, status) VALUES (?, ?, ?, ?, ?, ?)
                        """,
                        [.int(zoneRowID), .text(row.participantID), row.user.map { .int($0.id) } ?? .null, row.email.map { .text($0) } ?? .null,
                         .text(row.permission.rawValue), .text(row.status.rawValue)])
                }
            }
        }
        let sequence = transaction.nextSequence()
        let tag = RecordRules.changeTag(zoneRowID: zoneRowID, sequence: sequence)
        let modified = ChangeStamp(timestamp: transaction.now, userRecordName: transaction.writer, deviceID: transaction.deviceID)
        let created = live?.created ?? modified
        let fields = fieldsJSON ?? (operation.type.replacesFields ? Array("{}".utf8) : (live?.fieldsJSON ?? Array("{}".utf8)))
        try connection.run(
            """
            INSERT OR REPLACE INTO records (zone_id, name, type, tag, seq, deleted, fields, parent, created_at, created_by,
                created_device, modified_at, modified_by, modified_device) VALUES (?, ?, ?, ?, ?, 0, ?, NULL, ?, ?, ?, ?, ?, ?)
            """,
            [.int(zoneRowID), .text(name), .text(ShareRules.recordType), .text(tag), .int(sequence), .blob(fields),
             .int(created.timestamp), .text(created.userRecordName ?? ""), created.deviceID.sqlValue,
             .int(modified.timestamp), .text(modified.userRecordName ?? ""), modified.deviceID.sqlValue])
        let stored = StoredRecord(recordName: name, recordType: ShareRules.recordType, changeTag: tag, fieldsJSON: fields, parent: nil,
                                  created: created, modified: modified, zoneID: transaction.zoneID)
        transaction.changes.append(CommittedChange(kind: live == nil ? .created : .updated, recordName: name,
                                                   recordType: ShareRules.recordType, record: stored))
        return .saved(stored)
    }

    /// A participant leaves: its row goes, in the request's transaction.
    func leaveShare(_ scope: DatabaseScope, zoneRowID: Int64, _ connection: SQLiteConnection) throws {
        try connection.run("DELETE FROM share_participants WHERE zone_id = ? AND user_id = ?", [.int(zoneRowID), .int(scope.userID)])
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

    // MARK: Resolve, accept, invitations

    /// The shares behind `shortGUIDs` that invite the caller; `accept` also accepts them (the
    /// zone appears in its shared database). Anyone not invited gets `NOT_FOUND`.
    package func resolveShares(_ scope: DatabaseScope, shortGUIDs: [String], accept: Bool) throws -> [Result<JSONValue, ServerError>] {
        guard shortGUIDs.count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) shortGUIDs per request")
        }
        let privateDatabaseID = try callerDatabaseID(scope)
        var touched = Set<Int64>()
        let results = try database.writeSync { connection in
            try connection.transaction { () -> [Result<JSONValue, ServerError>] in
                guard let caller = try userIdentity(id: scope.userID, connection) else { throw ServerError(.authenticationFailed, "unknown user") }
                return try shortGUIDs.map { guid -> Result<JSONValue, ServerError> in
                    guard let zoneRowID = try connection.scalarInt(
                        """
                        SELECT s.zone_id FROM shares s JOIN zones z ON z.id = s.zone_id AND z.deleted = 0
                        JOIN databases d ON d.id = z.database_id AND d.container = ? AND d.environment = ? WHERE s.short_guid = ?
                        """, [.text(scope.container), .text(scope.environment.rawValue), .text(guid)]),
                        let share = try loadShare(zoneRowID: zoneRowID, connection),
                        var participant = try loadParticipants(zoneRowID: zoneRowID, connection).first(where: { $0.invites(caller) })
                    else { return .failure(ShareRules.unknownShare(guid)) }
                    if accept && participant.status != .accepted {
                        try connection.run(
                            "UPDATE share_participants SET user_id = ?, status = 'ACCEPTED', database_id = ? WHERE zone_id = ? AND participant_id = ?",
                            [.int(caller.id), .int(privateDatabaseID), .int(zoneRowID), .text(participant.participantID)])
                        participant.status = .accepted
                        participant.user = caller
                        if let zone = try connection.first("SELECT id, name, seq, purged_seq FROM zones WHERE id = ?", [.int(zoneRowID)], {
                            ZoneRow(id: $0.int64(0), name: $0.text(1), seq: $0.int64(2), purgedSeq: $0.int64(3))
                        }) {
                            // The participant's database subscriptions learn of the zone it now has.
                            let ownerScope = DatabaseScope(user: User(id: share.owner.id, name: share.owner.name, recordName: share.owner.recordName),
                                                           container: scope.container, environment: scope.environment)
                            touched.formUnion(try notifyParticipants([], zone: zone, ownerScope: ownerScope, zoneChanged: true,
                                                                     onlyDatabase: privateDatabaseID, connection))
                        }
                    }
                    let record = try connection.first(
                        "SELECT \(SQLiteRecordStore.recordColumns) FROM records WHERE zone_id = ? AND name = ? AND deleted = 0",
                        [.int(zoneRowID), .text(ShareRules.recordName)]) { storedRecord($0, zoneID: share.zoneID) }
                    guard let record else { return .failure(ShareRules.unknownShare(guid)) }
                    let shareRecord = try attachShare(record, zoneRowID: zoneRowID, caller: caller.recordName, connection)
                    return .success(ShareRules.resolveResult(share, shareRecord: shareRecord, participant: participant, scope: scope))
                }
            }
        }
        if !touched.isEmpty { onCommit?(touched) }
        return results
    }

    package func invitations(_ scope: DatabaseScope) throws -> [JSONValue] {
        try database.readSync { connection in
            try connection.readTransaction {
                guard let caller = try userIdentity(id: scope.userID, connection) else { return [] }
                let zoneRowIDs = try connection.map(
                    """
                    SELECT DISTINCT p.zone_id FROM share_participants p JOIN zones z ON z.id = p.zone_id AND z.deleted = 0
                    JOIN databases d ON d.id = z.database_id AND d.container = ? AND d.environment = ?
                    WHERE p.status = 'INVITED' AND (p.user_id = ? OR (p.user_id IS NULL AND p.email = ?)) ORDER BY p.zone_id
                    """, [.text(scope.container), .text(scope.environment.rawValue), .int(caller.id), caller.email.map { .text($0.lowercased()) } ?? .null]
                ) { $0.int64(0) }
                return try zoneRowIDs.compactMap { zoneRowID in
                    guard let share = try loadShare(zoneRowID: zoneRowID, connection),
                        let participant = try loadParticipants(zoneRowID: zoneRowID, connection).first(where: { $0.invites(caller) && $0.status == .invited })
                    else { return nil }
                    return ShareRules.invitation(share, participant: participant)
                }
            }
        }
    }

    // MARK: The shared database's zones

    func sharedZoneEntries(_ scope: DatabaseScope, _ connection: SQLiteConnection) throws -> [(entry: SharedDatabaseFeed.Entry, zone: ZoneRow)] {
        try connection.map(
            """
            SELECT z.id, z.name, z.seq, z.purged_seq, u.record_name FROM share_participants p
            JOIN zones z ON z.id = p.zone_id AND z.deleted = 0
            JOIN databases d ON d.id = z.database_id AND d.container = ? AND d.environment = ?
            JOIN users u ON u.id = d.user_id
            WHERE p.user_id = ? AND p.status = 'ACCEPTED' ORDER BY u.record_name, z.name
            """, [.text(scope.container), .text(scope.environment.rawValue), .int(scope.userID)]
        ) { row in
            (SharedDatabaseFeed.Entry(zoneRowID: row.int64(0), seq: row.int64(2), owner: row.text(4), zoneName: row.text(1)),
             ZoneRow(id: row.int64(0), name: row.text(1), seq: row.int64(2), purgedSeq: row.int64(3)))
        }
    }

    func listSharedZones(_ scope: DatabaseScope) throws -> [ZoneInfo] {
        try database.readSync { connection in
            try connection.readTransaction {
                try sharedZoneEntries(scope, connection).map {
                    ZoneInfo(zoneID: ZoneID(zoneName: $0.entry.zoneName, ownerRecordName: $0.entry.owner), syncToken: zoneToken($0.zone))
                }
            }
        }
    }

    package func lookupSharedZone(_ scope: DatabaseScope, zone: ZoneID) throws -> ZoneInfo {
        try database.readSync { connection in
            try connection.readTransaction {
                let access = try sharedAccess(scope, zone, connection)
                var info = ZoneInfo(zoneID: access.zoneID, syncToken: zoneToken(access.zone))
                info.readOnly = access.permission == .readOnly
                return info
            }
        }
    }

    func sharedDatabaseChanges(_ scope: DatabaseScope, syncToken: String?) throws -> DatabaseChangesPage {
        try database.readSync { connection in
            try connection.readTransaction {
                try SharedDatabaseFeed.page(storeID: storeID, scope: scope, syncToken: syncToken,
                                            current: try sharedZoneEntries(scope, connection).map(\.entry))
            }
        }
    }
}
