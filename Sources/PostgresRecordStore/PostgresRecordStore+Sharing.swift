import PostgresNIO
import RecordModel
import RecordStore

// Sharing is the store engine's (StoreEngine+Sharing, StoreEngine+SharedDatabase). These hand the
// engine's access check and share rows to the PostgreSQL transactions not yet on the engine
// (lookups, queries and feeds in a shared zone, a zone's deletion).
extension PostgresRecordStore {
    func connection(_ connection: PostgresConnection) -> any StoreConnection { PostgresStoreConnection(connection: connection, logger: logger) }

    package func discoverUsers(emails: [String], recordNames: [String]) async throws -> [UserIdentity] {
        try await engine.discoverUsers(emails: emails, recordNames: recordNames)
    }

    package func resolveShares(_ scope: DatabaseScope, shortGUIDs: [String], accept: Bool) async throws -> [Result<JSONValue, ServerError>] {
        try await engine.resolveShares(scope, shortGUIDs: shortGUIDs, accept: accept)
    }

    package func invitations(_ scope: DatabaseScope) async throws -> [JSONValue] { try await engine.invitations(scope) }

    package func lookupSharedZone(_ scope: DatabaseScope, zone: ZoneID) async throws -> ZoneInfo {
        try await engine.lookupSharedZone(scope, zone: zone)
    }

    func sharedAccess(_ scope: DatabaseScope, _ zone: ZoneID, lockOwner: Bool, _ connection: PostgresConnection) async throws -> SharedZoneAccess {
        try await engine.sharedAccess(scope, zone, lockOwner: lockOwner, self.connection(connection))
    }

    func addressedZone(_ scope: DatabaseScope, _ zone: ZoneID, privateDatabaseID: Int64, _ connection: PostgresConnection) async throws
        -> StoreEngine.AddressedZone
    {
        try await engine.addressedZone(scope, zone, privateDatabaseID: privateDatabaseID, self.connection(connection))
    }

    func attachShare(_ record: StoredRecord, zoneRowID: Int64, caller: String, _ connection: PostgresConnection) async throws -> StoredRecord {
        try await engine.attachShare(record, zoneRowID: zoneRowID, caller: caller, self.connection(connection))
    }

    func deleteShareRows(zoneRowID: Int64, _ connection: PostgresConnection) async throws {
        try await engine.deleteShareRows(zoneRowID: zoneRowID, self.connection(connection))
    }

    func notifyParticipants(_ changes: [CommittedChange], zone: ZoneRow, ownerScope: DatabaseScope, zoneChanged: Bool,
                            _ connection: PostgresConnection) async throws -> Set<Int64>
    {
        try await engine.notifyParticipants(changes, zone: zone, ownerScope: ownerScope, zoneChanged: zoneChanged, self.connection(connection))
    }
}
