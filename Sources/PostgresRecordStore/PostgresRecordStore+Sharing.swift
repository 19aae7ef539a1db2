import Foundation
import PostgresNIO
import RecordModel
import RecordStore

// Sharing on PostgreSQL, as the SQLite store does it (SQLiteRecordStore+Sharing):
// the rows of `shares` and `share_participants`, read and written in the request's transaction,
// with ShareRules deciding. A write in a shared zone locks the owner's database row before it
// checks access, as every share change does, so a removal and a write never overlap.
extension PostgresRecordStore {
    static let userColumns = "u.id, u.name, u.record_name, u.email"

    static func userIdentity(_ row: PostgresRow, at start: Int = 0) throws -> UserIdentity {
        let columns = row.makeRandomAccess()
        return UserIdentity(id: try columns[start].decode(Int64.self), name: try columns[start + 1].decode(String.self),
                            recordName: try columns[start + 2].decode(String.self), email: try columns[start + 3].decode(String?.self))
    }

    func user(id: Int64, _ connection: PostgresConnection) async throws -> UserIdentity? {
        try await connection.query("SELECT \(unescaped: Self.userColumns) FROM users u WHERE u.id = \(id)", logger: logger)
            .collect().first.map { try Self.userIdentity($0) }
    }

    func user(recordName: String, _ connection: PostgresConnection) async throws -> UserIdentity? {
        try await connection.query("SELECT \(unescaped: Self.userColumns) FROM users u WHERE u.record_name = \(recordName)", logger: logger)
            .collect().first.map { try Self.userIdentity($0) }
    }

    func user(email: String, _ connection: PostgresConnection) async throws -> UserIdentity? {
        try await connection.query("SELECT \(unescaped: Self.userColumns) FROM users u WHERE u.email = \(email)", logger: logger)
            .collect().first.map { try Self.userIdentity($0) }
    }

    package func discoverUsers(emails: [String], recordNames: [String]) async throws -> [UserIdentity] {
        try await read { connection in
            var found: [UserIdentity] = []
            for email in emails { if let user = try await self.user(email: email, connection) { found.append(user) } }
            for name in recordNames { if let user = try await self.user(recordName: name, connection) { found.append(user) } }
            return found
        }
    }

    // MARK: The access check

    /// The shared zone as the caller may use it (one indexed join); anything missing is
    /// `ZONE_NOT_FOUND`. `lockOwner` first locks the owner's database row (writers).
    func sharedAccess(_ scope: DatabaseScope, _ zone: ZoneID, lockOwner: Bool, _ connection: PostgresConnection) async throws -> SharedZoneAccess {
        let owner = try ShareRules.requireOwner(zone)
        let container = scope.container, environment = scope.environment.rawValue
        if lockOwner {
            try await connection.query(
                """
                SELECT 1 FROM databases d JOIN users u ON u.id = d.user_id
                WHERE u.record_name = \(owner) AND d.container = \(container) AND d.environment = \(environment) FOR UPDATE OF d
                """, logger: logger)
        }
        guard let row = try await connection.query(
            """
            SELECT z.id, z.name, z.seq, z.purged_seq, d.id, \(unescaped: Self.userColumns), p.permission
            FROM users u JOIN databases d ON d.user_id = u.id AND d.container = \(container) AND d.environment = \(environment)
            JOIN zones z ON z.database_id = d.id AND z.name = \(zone.zoneName) AND z.deleted = 0
            JOIN share_participants p ON p.zone_id = z.id AND p.user_id = \(scope.userID) AND p.status = 'ACCEPTED'
            WHERE u.record_name = \(owner)\(unescaped: lockOwner ? " FOR UPDATE OF z" : "")
            """, logger: logger
        ).collect().first else { throw ShareRules.zoneNotFound(zone) }
        let columns = row.makeRandomAccess()
        return SharedZoneAccess(
            zone: ZoneRow(id: try columns[0].decode(Int64.self), name: try columns[1].decode(String.self), seq: try columns[2].decode(Int64.self),
                          purgedSeq: try columns[3].decode(Int64.self)),
            ownerDatabaseID: try columns[4].decode(Int64.self), owner: try Self.userIdentity(row, at: 5),
            permission: SharePermission(rawValue: try columns[9].decode(String.self)) ?? .readOnly)
    }

    struct AddressedZone: Sendable {
        var databaseID: Int64
        var row: ZoneRow
        var zoneID: ZoneID
        var access: SharedZoneAccess?
    }

    /// The zone a request addresses: the caller's own, or a shared zone it was let into.
    func addressedZone(_ scope: DatabaseScope, _ zone: ZoneID, privateDatabaseID: Int64, forUpdate: Bool = false,
                       _ connection: PostgresConnection) async throws -> AddressedZone
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

    func loadShare(zoneRowID: Int64, _ connection: PostgresConnection) async throws -> ShareRow? {
        guard let row = try await connection.query(
            """
            SELECT s.short_guid, z.name, \(unescaped: Self.userColumns), r.fields FROM shares s JOIN zones z ON z.id = s.zone_id
            JOIN users u ON u.id = s.owner_user_id LEFT JOIN records r ON r.zone_id = s.zone_id AND r.name = \(ShareRules.recordName) AND r.deleted = 0
            WHERE s.zone_id = \(zoneRowID)
            """, logger: logger
        ).collect().first else { return nil }
        let columns = row.makeRandomAccess()
        let fields = try columns[6].decode(String?.self)
        return ShareRow(zoneRowID: zoneRowID, zoneName: try columns[1].decode(String.self), shortGUID: try columns[0].decode(String.self),
                        owner: try Self.userIdentity(row, at: 2), title: fields.flatMap { ShareRules.title(fieldsJSON: Array($0.utf8)) })
    }

    func loadParticipants(zoneRowID: Int64, _ connection: PostgresConnection) async throws -> [ParticipantRow] {
        try await connection.query(
            """
            SELECT p.participant_id, p.email, p.permission, p.status, \(unescaped: Self.userColumns) FROM share_participants p
            LEFT JOIN users u ON u.id = p.user_id WHERE p.zone_id = \(zoneRowID) ORDER BY p.participant_id
            """, logger: logger
        ).collect().map { row in
            let (id, email, permission, status, userID) = try row.decode((String, String?, String, String, Int64?).self)
            return ParticipantRow(participantID: id, user: userID == nil ? nil : try Self.userIdentity(row, at: 4), email: email,
                                  permission: SharePermission(rawValue: permission) ?? .readOnly,
                                  status: ShareAcceptance(rawValue: status) ?? .invited)
        }
    }

    func attachShare(_ record: StoredRecord, zoneRowID: Int64, caller: String, _ connection: PostgresConnection) async throws -> StoredRecord {
        guard record.recordName == ShareRules.recordName, let share = try await loadShare(zoneRowID: zoneRowID, connection) else { return record }
        var copy = record
        copy.shareJSON = ShareRules.shareJSON(share, participants: try await loadParticipants(zoneRowID: zoneRowID, connection),
                                              callerRecordName: caller)
        return copy
    }

    func deleteShareRows(zoneRowID: Int64, _ connection: PostgresConnection) async throws {
        try await connection.query("DELETE FROM shares WHERE zone_id = \(zoneRowID)", logger: logger)
        try await connection.query("DELETE FROM share_participants WHERE zone_id = \(zoneRowID)", logger: logger)
    }

    /// The owner saves the share record (see SQLiteRecordStore.saveShare).
    func saveShare(_ operation: RecordOperation, _ modify: inout ModifyTransaction, _ connection: PostgresConnection) async throws
        -> RecordOperationResult
    {
        let name = ShareRules.recordName
        let zoneRowID = modify.zone.id
        guard modify.zone.name != ZoneID.defaultZoneName else {
            throw ServerError.badRequest("_defaultZone cannot be shared; share a zone of your own")
        }
        let existing = try await loadRecord(zoneRowID, name, connection)
        let live = existing.flatMap { $0.deleted ? nil : $0 }
        func conflict(_ live: ExistingRecord) -> ServerError {
            var error = ServerError(.conflict, "record '\(name)' was changed since the change tag sent")
            error.serverRecord = live.stored(name, zoneID: modify.zoneID).json()
            return error
        }
        if operation.type.isDelete {
            guard let live else {
                if operation.type == .forceDelete { return .deleted(recordName: name) }
                throw ServerError(.notFound, "record '\(name)' does not exist")
            }
            if operation.type == .delete, operation.record["recordChangeTag"]?.stringValue != live.tag { throw conflict(live) }
            try await deleteCascading(name, &modify, connection)
            try await deleteShareRows(zoneRowID: zoneRowID, connection)
            return .deleted(recordName: name)
        }
        switch operation.type {
        case .create where live != nil: throw ServerError(.exists, "record '\(name)' already exists")
        case .update, .replace:
            guard let live else { throw ServerError(.notFound, "record '\(name)' does not exist") }
            guard operation.record["recordChangeTag"]?.stringValue == live.tag else { throw conflict(live) }
        default: break
        }
        let (requested, fieldsJSON) = try ShareRules.parseShareRecord(operation.record, isNew: live == nil)
        guard let owner = try await user(id: modify.scope.userID, connection) else { throw ServerError(.internalError, "owner missing") }
        if live == nil {
            try await connection.query(
                """
                INSERT INTO shares (zone_id, short_guid, owner_user_id) VALUES (\(zoneRowID), \(ShareRules.newShortGUID()), \(owner.id))
                ON CONFLICT (zone_id) DO UPDATE SET short_guid = EXCLUDED.short_guid, owner_user_id = EXCLUDED.owner_user_id
                """, logger: logger)
        }
        if let requested {
            var byName: [String: UserIdentity] = [:]
            var byEmail: [String: UserIdentity] = [:]
            for wanted in requested {
                if let recordName = wanted.userRecordName, let found = try await user(recordName: recordName, connection) { byName[recordName] = found }
                if let email = wanted.email, let found = try await user(email: email, connection) { byEmail[email] = found }
            }
            let previous = try await loadParticipants(zoneRowID: zoneRowID, connection)
            let merged = try ShareRules.merge(existing: previous, requested: requested, owner: owner, userByRecordName: byName, userByEmail: byEmail)
            let kept = Set(merged.map(\.participantID))
            for row in previous where !kept.contains(row.participantID) {
                try await connection.query(
                    "DELETE FROM share_participants WHERE zone_id = \(zoneRowID) AND participant_id = \(row.participantID)", logger: logger)
            }
            for row in merged {
                let userID = row.user?.id
                try await connection.query(
                    """
                    INSERT INTO share_participants (zone_id, participant_id, user_id, email, permission, status)
                    VALUES (\(zoneRowID), \(row.participantID), \(userID), \(row.email), \(row.permission.rawValue), \(row.status.rawValue))
                    ON CONFLICT (zone_id, participant_id) DO UPDATE SET user_id = EXCLUDED.user_id, email = EXCLUDED.email,
                        permission = EXCLUDED.permission
                    """, logger: logger)
            }
        }
        let sequence = modify.nextSequence()
        let tag = RecordRules.changeTag(zoneRowID: zoneRowID, sequence: sequence)
        let modified = ChangeStamp(timestamp: modify.now, userRecordName: modify.writer, deviceID: modify.deviceID)
        let created = live?.created ?? modified
        let fieldBytes = fieldsJSON ?? (operation.type.replacesFields ? Array("{}".utf8) : (live?.fieldsJSON ?? Array("{}".utf8)))
        let fields = String(decoding: fieldBytes, as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO records (zone_id, name, type, tag, seq, deleted, fields, parent, created_at, created_by, created_device,
                modified_at, modified_by, modified_device)
            VALUES (\(zoneRowID), \(name), \(ShareRules.recordType), \(tag), \(sequence), 0, \(fields), NULL, \(created.timestamp),
                \(created.userRecordName ?? ""), \(created.deviceID), \(modified.timestamp), \(modified.userRecordName ?? ""), \(modified.deviceID))
            ON CONFLICT (zone_id, name) DO UPDATE SET type = EXCLUDED.type, tag = EXCLUDED.tag, seq = EXCLUDED.seq, deleted = 0,
                fields = EXCLUDED.fields, parent = NULL, created_at = EXCLUDED.created_at, created_by = EXCLUDED.created_by,
                created_device = EXCLUDED.created_device, modified_at = EXCLUDED.modified_at, modified_by = EXCLUDED.modified_by,
                modified_device = EXCLUDED.modified_device
            """, logger: logger)
        let stored = StoredRecord(recordName: name, recordType: ShareRules.recordType, changeTag: tag, fieldsJSON: fieldBytes, parent: nil,
                                  created: created, modified: modified, zoneID: modify.zoneID)
        modify.changes.append(CommittedChange(kind: live == nil ? .created : .updated, recordName: name, recordType: ShareRules.recordType,
                                              record: stored))
        return .saved(stored)
    }

    func leaveShare(_ scope: DatabaseScope, zoneRowID: Int64, _ connection: PostgresConnection) async throws {
        try await connection.query("DELETE FROM share_participants WHERE zone_id = \(zoneRowID) AND user_id = \(scope.userID)", logger: logger)
    }

    /// Fires the accepted participants' shared-database subscriptions (`dbs` 3) in the change's
    /// transaction; returns the databases whose outbox grew (each announced to other daemons).
    func notifyParticipants(_ changes: [CommittedChange], zone: ZoneRow, ownerScope: DatabaseScope, zoneChanged: Bool,
                            onlyDatabase: Int64? = nil, _ connection: PostgresConnection) async throws -> Set<Int64>
    {
        var touched = Set<Int64>()
        // Ascending database ids: two writers notifying the same participants lock their rows in one order.
        let channels = try await connection.query(
            """
            SELECT p.database_id FROM share_participants p
            WHERE p.zone_id = \(zone.id) AND p.status = 'ACCEPTED' AND p.database_id IS NOT NULL ORDER BY p.database_id
            """, logger: logger
        ).collect().map { try $0.decode(Int64.self) }
        for databaseID in channels where onlyDatabase == nil || onlyDatabase == databaseID {
            let key = ShareRules.sharedSubscriptionKey(databaseID)
            let subscriptions = try await subscriptions(key, connection)
            let (payloads, firedOnce) = SubscriptionRules.fire(subscriptions, changes: changes, zone: zone.name, scope: ownerScope,
                                                               zoneChanged: zoneChanged, dbs: 3)
            if try await writeNotifications(payloads.map(\.payload), databaseID: databaseID, connection) {
                touched.insert(databaseID)
                try await notifyCommit(databaseID, connection)
            }
            for id in firedOnce {
                try await connection.query("DELETE FROM subscriptions WHERE database_id = \(key) AND subscription_id = \(id)", logger: logger)
            }
        }
        return touched
    }

    // MARK: Resolve, accept, invitations

    package func resolveShares(_ scope: DatabaseScope, shortGUIDs: [String], accept: Bool) async throws -> [Result<JSONValue, ServerError>] {
        guard shortGUIDs.count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) shortGUIDs per request")
        }
        let privateDatabaseID = try await databaseID(scope.privateScope)
        let (results, touched): ([Result<JSONValue, ServerError>], Set<Int64>) = try await write { connection in
            guard let caller = try await self.user(id: scope.userID, connection) else { throw ServerError(.authenticationFailed, "unknown user") }
            var results: [Result<JSONValue, ServerError>] = []
            var touched = Set<Int64>()
            for guid in shortGUIDs {
                guard let found = try await connection.query(
                    """
                    SELECT s.zone_id, d.id FROM shares s JOIN zones z ON z.id = s.zone_id AND z.deleted = 0
                    JOIN databases d ON d.id = z.database_id AND d.container = \(scope.container) AND d.environment = \(scope.environment.rawValue)
                    WHERE s.short_guid = \(guid)
                    """, logger: self.logger
                ).collect().first else {
                    results.append(.failure(ShareRules.unknownShare(guid)))
                    continue
                }
                let (zoneRowID, ownerDatabaseID) = try found.decode((Int64, Int64).self)
                if accept { try await self.lockDatabase(ownerDatabaseID, connection) }
                guard let share = try await self.loadShare(zoneRowID: zoneRowID, connection),
                    var participant = try await self.loadParticipants(zoneRowID: zoneRowID, connection).first(where: { $0.invites(caller) })
                else {
                    results.append(.failure(ShareRules.unknownShare(guid)))
                    continue
                }
                if accept && participant.status != .accepted {
                    try await connection.query(
                        """
                        UPDATE share_participants SET user_id = \(caller.id), status = 'ACCEPTED', database_id = \(privateDatabaseID)
                        WHERE zone_id = \(zoneRowID) AND participant_id = \(participant.participantID)
                        """, logger: self.logger)
                    participant.status = .accepted
                    participant.user = caller
                    if let zone = try await connection.query("SELECT id, name, seq, purged_seq FROM zones WHERE id = \(zoneRowID)", logger: self.logger)
                        .collect().first.map({ row -> ZoneRow in
                            let (id, name, seq, purged) = try row.decode((Int64, String, Int64, Int64).self)
                            return ZoneRow(id: id, name: name, seq: seq, purgedSeq: purged)
                        })
                    {
                        let ownerScope = DatabaseScope(user: User(id: share.owner.id, name: share.owner.name, recordName: share.owner.recordName),
                                                       container: scope.container, environment: scope.environment)
                        touched.formUnion(try await self.notifyParticipants([], zone: zone, ownerScope: ownerScope, zoneChanged: true,
                                                                            onlyDatabase: privateDatabaseID, connection))
                    }
                }
                guard let recordRow = try await connection.query(
                    """
                    SELECT \(unescaped: PostgresRecordStore.recordColumns) FROM records
                    WHERE zone_id = \(zoneRowID) AND name = \(ShareRules.recordName) AND deleted = 0
                    """, logger: self.logger
                ).collect().first else {
                    results.append(.failure(ShareRules.unknownShare(guid)))
                    continue
                }
                let record = try PostgresRecordStore.storedRecord(recordRow, zoneID: share.zoneID)
                let shareRecord = try await self.attachShare(record, zoneRowID: zoneRowID, caller: caller.recordName, connection)
                results.append(.success(ShareRules.resolveResult(share, shareRecord: shareRecord, participant: participant, scope: scope)))
            }
            return (results, touched)
        }
        for databaseID in touched { committed(databaseID) }
        return results
    }

    package func invitations(_ scope: DatabaseScope) async throws -> [JSONValue] {
        try await read { connection in
            guard let caller = try await self.user(id: scope.userID, connection) else { return [] }
            let zoneRowIDs = try await connection.query(
                """
                SELECT DISTINCT p.zone_id FROM share_participants p JOIN zones z ON z.id = p.zone_id AND z.deleted = 0
                JOIN databases d ON d.id = z.database_id AND d.container = \(scope.container) AND d.environment = \(scope.environment.rawValue)
                WHERE p.status = 'INVITED' AND (p.user_id = \(caller.id) OR (p.user_id IS NULL AND p.email = \(caller.email?.lowercased())))
                ORDER BY p.zone_id
                """, logger: self.logger
            ).collect().map { try $0.decode(Int64.self) }
            var invitations: [JSONValue] = []
            for zoneRowID in zoneRowIDs {
                guard let share = try await self.loadShare(zoneRowID: zoneRowID, connection),
                    let participant = try await self.loadParticipants(zoneRowID: zoneRowID, connection)
                        .first(where: { $0.invites(caller) && $0.status == .invited })
                else { continue }
                invitations.append(ShareRules.invitation(share, participant: participant))
            }
            return invitations
        }
    }

    // MARK: The shared database's zones

    func sharedZoneEntries(_ scope: DatabaseScope, _ connection: PostgresConnection) async throws
        -> [(entry: SharedDatabaseFeed.Entry, zone: ZoneRow)]
    {
        try await connection.query(
            """
            SELECT z.id, z.name, z.seq, z.purged_seq, u.record_name FROM share_participants p
            JOIN zones z ON z.id = p.zone_id AND z.deleted = 0
            JOIN databases d ON d.id = z.database_id AND d.container = \(scope.container) AND d.environment = \(scope.environment.rawValue)
            JOIN users u ON u.id = d.user_id
            WHERE p.user_id = \(scope.userID) AND p.status = 'ACCEPTED' ORDER BY u.record_name, z.name
            """, logger: logger
        ).collect().map { row in
            let (id, name, seq, purged, owner) = try row.decode((Int64, String, Int64, Int64, String).self)
            return (SharedDatabaseFeed.Entry(zoneRowID: id, seq: seq, owner: owner, zoneName: name),
                    ZoneRow(id: id, name: name, seq: seq, purgedSeq: purged))
        }
    }

    func listSharedZones(_ scope: DatabaseScope) async throws -> [ZoneInfo] {
        let storeID = self.storeID
        return try await read { connection in
            try await self.sharedZoneEntries(scope, connection).map {
                ZoneInfo(zoneID: ZoneID(zoneName: $0.entry.zoneName, ownerRecordName: $0.entry.owner),
                         syncToken: FeedRules.zoneToken(storeID: storeID, zone: $0.zone))
            }
        }
    }

    package func lookupSharedZone(_ scope: DatabaseScope, zone: ZoneID) async throws -> ZoneInfo {
        let storeID = self.storeID
        return try await read { connection in
            let access = try await self.sharedAccess(scope, zone, lockOwner: false, connection)
            var info = ZoneInfo(zoneID: access.zoneID, syncToken: FeedRules.zoneToken(storeID: storeID, zone: access.zone))
            info.readOnly = access.permission == .readOnly
            return info
        }
    }

    func sharedDatabaseChanges(_ scope: DatabaseScope, syncToken: String?) async throws -> DatabaseChangesPage {
        let storeID = self.storeID
        return try await read { connection in
            try SharedDatabaseFeed.page(storeID: storeID, scope: scope, syncToken: syncToken,
                                        current: try await self.sharedZoneEntries(scope, connection).map(\.entry))
        }
    }
}
