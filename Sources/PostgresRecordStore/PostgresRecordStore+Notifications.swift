import RecordStore

extension PostgresRecordStore {
    package func notifications(databaseID: Int64, after cursor: Int64, limit: Int) async throws -> [StoredNotification] {
        try await engine.notifications(databaseID: databaseID, after: cursor, limit: limit)
    }
}
