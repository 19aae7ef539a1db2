import Foundation
import RecordModel
import SQLiteDB

extension SQLiteRecordStore {
    /// The `meta` key counting revocations; `authenticate` compares it to drop cached tokens.
    static let revocationCountKey = "token_revocations"

    /// Revokes `token` of the user `userName`, or every token of the user when `token` is nil
    /// (`scorebookd user revoke`). A revoked token is then `AUTHENTICATION_FAILED`, also in a
    /// daemon serving the store from another process. Returns the user and how many tokens this
    /// call revoked (0 when they were revoked already). A token that is not the user's is
    /// `NOT_FOUND`, so a revocation never silently misses.
    package func revokeTokens(userName: String, token: String?) throws -> (user: User, revoked: Int) {
        try database.writeSync { connection in
            try connection.transaction {
                let user = try requireUser(named: userName, connection)
                let revoked: Int
                if let token {
                    let hash = TokenHash.hex(token)
                    let owner = try connection.scalarInt("SELECT user_id FROM auth_tokens WHERE token_hash = ?", [.text(hash)])
                    guard owner == user.id else { throw ServerError(.notFound, "user '\(userName)' has no such token") }
                    revoked = try connection.run("UPDATE auth_tokens SET revoked = 1 WHERE token_hash = ? AND revoked = 0", [.text(hash)])
                } else {
                    revoked = try connection.run("UPDATE auth_tokens SET revoked = 1 WHERE user_id = ? AND revoked = 0", [.int(user.id)])
                }
                try countRevocation(connection)
                return (user, revoked)
            }
        }
    }

    /// Bumps the revocation count, so a daemon serving the store drops the tokens it cached.
    func countRevocation(_ connection: SQLiteConnection) throws {
        try connection.run(
            """
            INSERT INTO meta (key, value) VALUES (?, '1')
            ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
            """, [.text(Self.revocationCountKey)])
    }

    /// How many `revokeTokens` calls the store has seen (0 before the first).
    func revocationCount() throws -> Int64 {
        try database.readSync { connection in
            try connection.first("SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?", [.text(Self.revocationCountKey)]) {
                $0.int64(0)
            } ?? 0
        }
    }
}
