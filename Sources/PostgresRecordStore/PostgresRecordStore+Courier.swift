import PostgresNIO
import RecordModel
import RecordStore

extension PostgresRecordStore {
    /// The channel whose courier URL carries `token`, while its user still has a live token.
    package func courierChannel(token: String, container: String, environment: Environment) async throws -> PushToken? {
        try await read { connection in
            guard let row = try await connection.query(
                """
                SELECT p.database_id, p.apns_environment, p.start_cursor FROM push_tokens p JOIN databases d ON d.id = p.database_id
                WHERE p.token = \(token) AND d.container = \(container) AND d.environment = \(environment.rawValue)
                  AND EXISTS (SELECT 1 FROM auth_tokens a WHERE a.user_id = p.user_id AND a.revoked = 0)
                """, logger: self.logger
            ).collect().first else { return nil }
            let (database, apnsEnvironment, start) = try row.decode((Int64, String, Int64).self)
            return PushToken(token: token, apnsEnvironment: apnsEnvironment, databaseID: database, startCursor: start)
        }
    }
}
