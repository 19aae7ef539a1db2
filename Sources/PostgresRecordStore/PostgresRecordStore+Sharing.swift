import PostgresNIO
import RecordModel
import RecordStore

// Records modify, sharing and queries are the store engine's (`EngineWriteStorage`,
// `EngineQueryStorage`). These hand the engine's share rows to a zone's deletion, still a
// PostgreSQL transaction of its own.
extension PostgresRecordStore: EngineWriteStorage, EngineQueryStorage {
    func connection(_ connection: PostgresConnection) -> any StoreConnection { PostgresStoreConnection(connection: connection, logger: logger) }

    func deleteShareRows(zoneRowID: Int64, _ connection: PostgresConnection) async throws {
        try await engine.deleteShareRows(zoneRowID: zoneRowID, self.connection(connection))
    }

    func notifyParticipants(_ changes: [CommittedChange], zone: ZoneRow, ownerScope: DatabaseScope, zoneChanged: Bool,
                            _ connection: PostgresConnection) async throws -> Set<Int64>
    {
        try await engine.notifyParticipants(changes, zone: zone, ownerScope: ownerScope, zoneChanged: zoneChanged, self.connection(connection))
    }
}
