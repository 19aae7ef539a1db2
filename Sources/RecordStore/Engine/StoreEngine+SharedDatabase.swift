import RecordModel

/// Finding users, resolving and accepting shares, invitations, and the shared database's zones
/// and changes (a participant's view of the zones shared with it).
extension StoreEngine {
    /// Users by the email given at `user create` or by record name; unknown ones are absent.
    package func discoverUsers(emails: [String], recordNames: [String]) async throws -> [UserIdentity] {
        try await driver.read { connection in
            let byEmail = try await self.users("email", in: emails, connection)
            let byName = try await self.users("record_name", in: recordNames, connection)
            return emails.compactMap { byEmail[$0] } + recordNames.compactMap { byName[$0] }
        }
    }

    /// The shares behind `shortGUIDs` that invite the caller; `accept` also accepts them (the
    /// zone appears in its shared database). Anyone not invited gets `NOT_FOUND`.
    package func resolveShares(_ scope: DatabaseScope, shortGUIDs: [String], accept: Bool) async throws -> [Result<JSONValue, ServerError>] {
        guard shortGUIDs.count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) shortGUIDs per request")
        }
        let privateDatabaseID = try await databaseID(scope.privateScope)
        let script: @Sendable (any StoreConnection) async throws -> ([Result<JSONValue, ServerError>], Set<Int64>) = { connection in
            guard let caller = try await self.user(id: scope.userID, connection) else { throw ServerError(.authenticationFailed, "unknown user") }
            let found = try await connection.rows(
                """
                SELECT s.short_guid, s.zone_id, d.id FROM shares s JOIN zones z ON z.id = s.zone_id AND z.deleted = 0
                JOIN databases d ON d.id = z.database_id AND d.container = ? AND d.environment = ?
                WHERE
                """ + " " + connection.dialect.isInJSONArray("s.short_guid"),
                [.text(scope.container), .text(scope.environment.rawValue), .text(JSONArgument.array(shortGUIDs))])
            let shares = Dictionary(found.map { ($0.text(0), (zone: $0.int(1), database: $0.int(2))) }, uniquingKeysWith: { first, _ in first })
            var results: [Result<JSONValue, ServerError>] = []
            var touched = Set<Int64>()
            for guid in shortGUIDs {
                guard let (zoneRowID, ownerDatabaseID) = shares[guid] else {
                    results.append(.failure(ShareRules.unknownShare(guid)))
                    continue
                }
                if accept { try await self.lockDatabase(ownerDatabaseID, connection) }
                guard let share = try await self.loadShare(zoneRowID: zoneRowID, connection),
                    var participant = try await self.loadParticipants(zoneRowID: zoneRowID, connection).first(where: { $0.invites(caller) })
                else {
                    results.append(.failure(ShareRules.unknownShare(guid)))
                    continue
                }
                if accept && participant.status != .accepted {
                    try await connection.execute(
                        "UPDATE share_participants SET user_id = ?, status = 'ACCEPTED', database_id = ? WHERE zone_id = ? AND participant_id = ?",
                        [.int(caller.id), .int(privateDatabaseID), .int(zoneRowID), .text(participant.participantID)])
                    participant.status = .accepted
                    participant.user = caller
                    if let zone = try await connection.first("SELECT id, name, seq, purged_seq FROM zones WHERE id = ?", [.int(zoneRowID)]) {
                        // The participant's database subscriptions learn of the zone it now has.
                        let ownerScope = DatabaseScope(user: User(id: share.owner.id, name: share.owner.name, recordName: share.owner.recordName),
                                                       container: scope.container, environment: scope.environment)
                        touched.formUnion(try await self.notifyParticipants([], zone: ZoneRow(zone), ownerScope: ownerScope, zoneChanged: true,
                                                                            onlyDatabase: privateDatabaseID, connection))
                    }
                }
                guard let row = try await connection.first("SELECT \(RecordWrites.columns) FROM records WHERE zone_id = ? AND name = ? AND deleted = 0",
                                                            [.int(zoneRowID), .text(ShareRules.recordName)])
                else {
                    results.append(.failure(ShareRules.unknownShare(guid)))
                    continue
                }
                let shareRecord = try await self.attachShare(ExistingRecord(row).stored(ShareRules.recordName, zoneID: share.zoneID),
                                                             zoneRowID: zoneRowID, caller: caller.recordName, connection)
                results.append(.success(ShareRules.resolveResult(share, shareRecord: shareRecord, participant: participant, scope: scope)))
            }
            return (results, touched)
        }
        // Share links name the request's address; the script may run outside the request's task.
        let linkBase = ShareRules.requestLinkBase
        let wrapped: @Sendable (any StoreConnection) async throws -> ([Result<JSONValue, ServerError>], Set<Int64>) = { connection in
            try await ShareRules.$requestLinkBase.withValue(linkBase) { try await script(connection) }
        }
        let (results, touched) = accept ? try await driver.write(wrapped) : try await driver.read(wrapped)
        committed(touched)
        return results
    }

    /// The shares inviting the caller that it has not accepted.
    package func invitations(_ scope: DatabaseScope) async throws -> [JSONValue] {
        try await driver.read { connection in
            guard let caller = try await self.user(id: scope.userID, connection) else { return [] }
            let zoneRowIDs = try await connection.rows(
                """
                SELECT DISTINCT p.zone_id FROM share_participants p JOIN zones z ON z.id = p.zone_id AND z.deleted = 0
                JOIN databases d ON d.id = z.database_id AND d.container = ? AND d.environment = ?
                WHERE p.status = 'INVITED' AND (p.user_id = ? OR (p.user_id IS NULL AND p.email = ?)) ORDER BY p.zone_id
                """, [.text(scope.container), .text(scope.environment.rawValue), .int(caller.id), caller.email.map { .text($0.lowercased()) } ?? .null]
            ).map { $0.int(0) }
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

    /// The zones shared with the caller that it accepted, by owner and name.
    private func sharedZoneEntries(_ scope: DatabaseScope, _ connection: any StoreConnection) async throws
        -> [(entry: SharedDatabaseFeed.Entry, zone: ZoneRow)]
    {
        try await connection.rows(
            """
            SELECT z.id, z.name, z.seq, z.purged_seq, u.record_name FROM share_participants p
            JOIN zones z ON z.id = p.zone_id AND z.deleted = 0
            JOIN databases d ON d.id = z.database_id AND d.container = ? AND d.environment = ?
            JOIN users u ON u.id = d.user_id
            WHERE p.user_id = ? AND p.status = 'ACCEPTED' ORDER BY u.record_name, z.name
            """, [.text(scope.container), .text(scope.environment.rawValue), .int(scope.userID)]
        ).map { row in
            (SharedDatabaseFeed.Entry(zoneRowID: row.int(0), seq: row.int(2), owner: row.text(4), zoneName: row.text(1)), ZoneRow(row))
        }
    }

    package func listSharedZones(_ scope: DatabaseScope) async throws -> [ZoneInfo] {
        try await driver.read { connection in
            try await self.sharedZoneEntries(scope, connection).map {
                ZoneInfo(zoneID: ZoneID(zoneName: $0.entry.zoneName, ownerRecordName: $0.entry.owner),
                         syncToken: FeedRules.zoneToken(storeID: self.storeID, zone: $0.zone))
            }
        }
    }

    /// `zones/lookup` in the shared database (the zone names its owner).
    package func lookupSharedZone(_ scope: DatabaseScope, zone: ZoneID) async throws -> ZoneInfo {
        try await driver.read { connection in
            let access = try await self.sharedAccess(scope, zone, connection)
            var info = ZoneInfo(zoneID: access.zoneID, syncToken: FeedRules.zoneToken(storeID: self.storeID, zone: access.zone))
            info.readOnly = access.permission == .readOnly
            return info
        }
    }

    /// `changes/database` of the shared database: the zones shared with the caller that came or went.
    package func sharedDatabaseChanges(_ scope: DatabaseScope, syncToken: String?) async throws -> DatabaseChangesPage {
        try await driver.read { connection in
            try SharedDatabaseFeed.page(storeID: self.storeID, scope: scope, syncToken: syncToken,
                                        current: try await self.sharedZoneEntries(scope, connection).map(\.entry))
        }
    }
}
