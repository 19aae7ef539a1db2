import Foundation
import PostgresNIO
import RecordModel
import RecordStore

extension PostgresRecordStore {
    /// Revokes `token` of the user `userName`, or every token of the user when `token` is nil
    /// (`scorebookd user revoke`), as `SQLiteRecordStore.revokeTokens` does. Tokens are not cached
    /// here, so every daemon on the database refuses a revoked token from its next request.
    /// A token that is not the user's is `NOT_FOUND`, so a revocation never silently misses.
    package func revokeTokens(userName: String, token: String?) async throws -> (user: User, revoked: Int) {
        let answer: RevokedTokens = try await write { connection in
            let user = try await self.requireUser(named: userName, connection)
            let revoked: Int
            if let token {
                let hash = TokenHash.hex(token)
                let owner = try await connection.query("SELECT user_id FROM auth_tokens WHERE token_hash = \(hash)", logger: self.logger)
                    .collect().first?.decode(Int64.self)
                guard owner == user.id else { throw ServerError(.notFound, "user '\(userName)' has no such token") }
                revoked = try await connection.query(
                    "UPDATE auth_tokens SET revoked = 1 WHERE token_hash = \(hash) AND revoked = 0 RETURNING 1", logger: self.logger
                ).collect().count
            } else {
                revoked = try await connection.query(
                    "UPDATE auth_tokens SET revoked = 1 WHERE user_id = \(user.id) AND revoked = 0 RETURNING 1", logger: self.logger
                ).collect().count
            }
            return RevokedTokens(user: user, revoked: revoked)
        }
        return (answer.user, answer.revoked)
    }

    struct RevokedTokens: Sendable {
        var user: User
        var revoked: Int
    }
}

