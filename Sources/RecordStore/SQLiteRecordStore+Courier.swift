import Foundation
import RecordModel
import SQLiteDB

extension SQLiteRecordStore {
    /// The channel whose courier URL carries `token`, while the token that made it is live and it
    /// was used in the last 30 days.
    package func courierChannel(token: String, container: String, environment: Environment) throws -> PushToken? {
        let now = clock()
        let found = try database.readSync { connection in
            try connection.first(
                """
                SELECT p.database_id, p.apns_environment, p.start_cursor, COALESCE(p.last_used_at, p.created_at)
                FROM push_tokens p JOIN databases d ON d.id = p.database_id
                WHERE p.token = ?3 AND d.container = ?4 AND d.environment = ?5 AND
                """ + " " + CourierRules.liveCondition.replacingOccurrences(of: "$", with: "?"),
                [.int(now), .int(now - CourierRules.unusedLifetimeMillis), .text(token), .text(container), .text(environment.rawValue)]) {
                (PushToken(token: token, apnsEnvironment: $0.text(1), databaseID: $0.int64(0), startCursor: $0.int64(2)), $0.int64(3))
            }
        }
        guard let (channel, lastUsed) = found else { return nil }
        if now - lastUsed >= CourierRules.useRecordingMillis {
            try database.writeSync { try $0.run("UPDATE push_tokens SET last_used_at = ? WHERE token = ?", [.int(now), .text(token)]) }
        }
        return channel
    }
}
