import RecordModel

/// `zones/list` and `zones/lookup` of a private or public database (a shared database's zones
/// are the sharing domain's).
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
}
