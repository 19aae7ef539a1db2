import PostgresNIO
import RecordModel
import RecordStore

extension PostgresRecordStore {
    /// The channel whose courier URL carries `token`, while the token that made it is live and it
    /// was used in the last 30 days.
    package func courierChannel(token: String, container: String, environment: Environment) async throws -> PushToken? {
        let now = clock()
        var bindings = PostgresBindings()
        bindings.append(now)
        bindings.append(now - CourierRules.unusedLifetimeMillis)
        bindings.append(token)
        bindings.append(container)
        bindings.append(environment.rawValue)
        let query = PostgresQuery(unsafeSQL: """
            SELECT p.database_id, p.apns_environment, p.start_cursor, COALESCE(p.last_used_at, p.created_at)
            FROM push_tokens p JOIN databases d ON d.id = p.database_id
            WHERE p.token = $3 AND d.container = $4 AND d.environment = $5 AND
            """ + " " + CourierRules.liveCondition, binds: bindings)
        let found = try await read { connection in
            try await connection.query(query, logger: self.logger).collect().first
                .map { try $0.decode((Int64, String, Int64, Int64).self) }
        }
        guard let (database, apnsEnvironment, start, lastUsed) = found else { return nil }
        if now - lastUsed >= CourierRules.useRecordingMillis {
            try await write { connection in
                try await connection.query("UPDATE push_tokens SET last_used_at = \(now) WHERE token = \(token)", logger: self.logger)
            }
        }
        return PushToken(token: token, apnsEnvironment: apnsEnvironment, databaseID: database, startCursor: start)
    }
}
