import RecordModel
import SQLiteDB

extension SQLiteRecordStore {
    /// The channel whose courier URL carries `token`, while its user still has a live token.
    package func courierChannel(token: String, container: String, environment: Environment) throws -> PushToken? {
        try database.readSync { connection in
            try connection.first(
                """
                SELECT p.database_id, p.apns_environment, p.start_cursor FROM push_tokens p JOIN databases d ON d.id = p.database_id
                WHERE p.token = ? AND d.container = ? AND d.environment = ?
                  AND EXISTS (SELECT 1 FROM auth_tokens a WHERE a.user_id = p.user_id AND a.revoked = 0)
                """, [.text(token), .text(container), .text(environment.rawValue)]) {
                PushToken(token: token, apnsEnvironment: $0.text(1), databaseID: $0.int64(0), startCursor: $0.int64(2))
            }
        }
    }
}
