import RecordModel

/// `zones/list`, `zones/lookup`, creating and deleting a zone in a private or public database (a
/// shared database's zones are the sharing domain's).
extension StoreEngine {
    package func listZones(_ scope: DatabaseScope) async throws -> [ZoneInfo] {
        let databaseID = try await databaseID(scope)
        return try await driver.read { connection in
            try await connection.rows("SELECT id, name, seq, purged_seq FROM zones WHERE database_id = ? AND deleted = 0 ORDER BY name",
                                      [.int(databaseID)]).map { self.zoneInfo(ZoneRow($0), scope) }
        }
    }

    package func lookupZone(_ scope: DatabaseScope, zoneName: String) async throws -> ZoneInfo {
        guard scope.kind != .shared else { throw ServerError.badRequest("a shared zone is looked up with its ownerRecordName") }
        let databaseID = try await databaseID(scope)
        return try await driver.read { connection in
            self.zoneInfo(try await self.requireZone(databaseID, ZoneID(zoneName: zoneName), connection), scope)
        }
    }

    /// Creates the zone, or answers the live zone of that name as it is.
    package func createZone(_ scope: DatabaseScope, zoneName: String) async throws -> ZoneInfo {
        guard scope.kind != .shared else { throw ServerError.badRequest("zones cannot be created in the shared database") }
        try Names.validateZoneName(zoneName)
        try ZoneRules.checkCreation(scope)
        let databaseID = try await databaseID(scope)
        let (info, created) = try await driver.write { connection -> (ZoneInfo, Bool) in
            try await self.lockDatabase(databaseID, connection)
            if let existing = try await self.liveZone(databaseID, name: zoneName, connection) { return (self.zoneInfo(existing, scope), false) }
            let dbSeq = try await self.bumpDatabaseSequence(databaseID, connection)
            let id = try await connection.scalarInt("INSERT INTO zones (database_id, name, db_seq) VALUES (?, ?, ?) RETURNING id",
                                                    [.int(databaseID), .text(zoneName), .int(dbSeq)]) ?? 0
            try await self.startWebhookStreams(zoneRowID: id, connection)
            try await self.recordNotifications(for: [], zone: zoneName, databaseID: databaseID, scope: scope, zoneChanged: true, connection)
            try await self.driver.announceCommit(of: databaseID, connection)
            return (self.zoneInfo(ZoneRow(id: id, name: zoneName, seq: 0, purgedSeq: 0), scope), true)
        }
        if created { committed([databaseID]) }
        return info
    }

    /// Deletes a zone with every record in it. Each record removed notifies like a direct
    /// deletion; the share's participants hear of it, then lose the zone.
    package func deleteZone(_ scope: DatabaseScope, zoneName: String) async throws {
        guard zoneName != ZoneID.defaultZoneName else { throw ServerError.badRequest("the default zone cannot be deleted") }
        guard scope.kind != .shared else { throw ServerError(.accessDenied, "only the owner deletes a shared zone") }
        let databaseID = try await databaseID(scope)
        let now = clock()
        let (changed, webhookEvents) = try await driver.write { connection -> (Set<Int64>, Bool) in
            try await self.lockDatabase(databaseID, connection)
            let zone = try await self.requireZone(databaseID, ZoneID(zoneName: zoneName), forUpdate: true, connection)
            let zoneID = self.zoneID(zone.name, scope)
            var removed: [CommittedChange] = []
            try await connection.forEachRow("SELECT \(Self.recordColumns) FROM records WHERE zone_id = ? AND deleted = 0", [.int(zone.id)]) { row in
                let record = Self.storedRecord(row, zoneID: zoneID, shareJSON: nil)
                removed.append(CommittedChange(kind: .deleted, recordName: record.recordName, recordType: record.recordType, record: record))
            }
            var changed: Set<Int64> = [databaseID]
            changed.formUnion(try await self.recordNotifications(for: removed, zone: zone.name, databaseID: databaseID, scope: scope,
                                                                 zoneChanged: true, connection))
            changed.formUnion(try await self.notifyParticipants(removed, zone: zone, ownerScope: scope, zoneChanged: true, connection))
            // One `zone.deleted`, not an event per record: the zone and everything in it went at once.
            try await self.keepDeletedZoneForWebhooks(zone, at: now, connection)
            try await self.deleteShareRows(zoneRowID: zone.id, connection)
            let dbSeq = try await self.bumpDatabaseSequence(databaseID, connection)
            for table in ["records", "refs", "query_index", "query_counts", "query_fields"] {
                _ = try await connection.execute("DELETE FROM \(table) WHERE zone_id = ?", [.int(zone.id)])
            }
            _ = try await connection.execute("UPDATE zones SET deleted = 1, deleted_at = ?, db_seq = ? WHERE id = ?",
                                         [.int(now), .int(dbSeq), .int(zone.id)])
            try await self.driver.announceCommit(of: databaseID, connection)
            return (changed, true)
        }
        committed(changed, webhookEvents: webhookEvents)
    }
}
