import PostgresNIO
import RecordModel
import RecordStore

// Records modify and sharing are the store engine's (`EngineWriteStorage`). These hand the
// engine's access check and share rows to the PostgreSQL transactions not yet on the engine
// (lookups, queries and feeds in a shared zone, a zone's deletion).
extension PostgresRecordStore: EngineWriteStorage {
    func connection(_ connection: PostgresConnection) -> any StoreConnection { PostgresStoreConnection(connection: connection, logger: logger) }

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
