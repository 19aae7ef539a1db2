import Foundation
import RecordModel
import SQLiteDB

extension SQLiteRecordStore {
    package func notifications(databaseID: Int64, after cursor: Int64, limit: Int) throws -> [StoredNotification] {
        try database.readSync { connection in
            try connection.map("SELECT id, payload FROM notifications WHERE database_id = ? AND id > ? ORDER BY id LIMIT ?",
                               [.int(databaseID), .int(cursor), .int(Int64(limit))]) { StoredNotification(id: $0.int64(0), payload: $0.blob(1)) }
        }
    }
}
