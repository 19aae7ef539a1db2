import Foundation
import PostgresNIO
import RecordModel
import RecordStore

extension PostgresRecordStore {
    package func notifications(databaseID: Int64, after cursor: Int64, limit: Int) async throws -> [StoredNotification] {
        try await read { connection in
            try await connection.query(
                """
                SELECT id, payload FROM notifications WHERE database_id = \(databaseID) AND id > \(cursor) ORDER BY id LIMIT \(Int64(limit))
                """, logger: self.logger
            ).collect().map {
                let (id, payload) = try $0.decode((Int64, String).self)
                return StoredNotification(id: id, payload: Array(payload.utf8))
            }
        }
    }
}
