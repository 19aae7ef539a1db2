import Foundation
import RecordModel

/// How a request proves who sends it: user tokens (and their revocation), API tokens,
/// server-to-server keys, and the courier URL of a notification channel.
extension StoreEngine {
    /// The token's user, nil when the token is unknown or revoked; an expired one is
    /// `AUTHENTICATION_FAILED` saying so. Not cached: a token revoked through any process fails
    /// at its next request. Its last use is written at most once a minute (`uses`), after the read;
    /// a store too busy to take it now takes the next one.
    package func authenticate(bearerToken: String, uses: TokenUseRecorder) async throws -> User? {
        guard CredentialRules.isPlausibleBearerToken(bearerToken) else { return nil }
        let hash = TokenHash.hex(bearerToken)
        let now = clock()
        // One statement: on PostgreSQL without the BEGIN and COMMIT round trips of a transaction,
        // which every request's sign-in paid.
        let found = try await driver.readByKey { connection in
            try await connection.first(
                """
                SELECT u.id, u.name, u.record_name, t.expires_at FROM auth_tokens t JOIN users u ON u.id = t.user_id
                WHERE t.token_hash = ? AND t.revoked = 0
                """, [.text(hash)])
        }
        guard let found else { return nil }
        if TokenRules.isExpired(found.optionalInt(3), now: now) { throw TokenRules.expired() }
        if uses.shouldRecord(tokenHash: hash, now: now) {
            _ = try? await driver.write { connection in
                try await connection.execute("UPDATE auth_tokens SET last_used_at = ? WHERE token_hash = ?", [.int(now), .text(hash)])
            }
        }
        return User(found)
    }

    package func authenticate(apiToken: String, webAuthToken: String, uses: TokenUseRecorder) async throws -> User? {
        guard try await isValidAPIToken(apiToken) else { return nil }
        return try await authenticate(bearerToken: webAuthToken, uses: uses)
    }

    package func createAPIToken() async throws -> String {
        let token = RandomToken.hex(bytes: 32)
        let now = clock()
        _ = try await driver.write { connection in
            try await connection.execute("INSERT INTO api_tokens (token_hash, created_at) VALUES (?, ?)", [.text(TokenHash.hex(token)), .int(now)])
        }
        return token
    }

    package func isValidAPIToken(_ apiToken: String) async throws -> Bool {
        guard CredentialRules.isWellFormedAPIToken(apiToken) else { return false }
        let hash = TokenHash.hex(apiToken.lowercased())
        return try await driver.readByKey { try await $0.first("SELECT 1 FROM api_tokens WHERE token_hash = ?", [.text(hash)]) != nil }
    }

    /// Revokes `token` of the user `userName`, or every token of the user when `token` is nil
    /// (`scorebookd user revoke`). Returns the user and how many tokens this call revoked (0 when
    /// they were revoked already). A token that is not the user's is `NOT_FOUND`, so a revocation
    /// never silently misses.
    package func revokeTokens(userName: String, token: String?) async throws -> (user: User, revoked: Int) {
        let answer = try await driver.write { connection -> RevokedTokens in
            let user = try await Self.requireUser(named: userName, connection)
            let revoked: Int
            if let token {
                let hash = TokenHash.hex(token)
                let owner = try await connection.scalarInt("SELECT user_id FROM auth_tokens WHERE token_hash = ?", [.text(hash)])
                guard owner == user.id else { throw ServerError(.notFound, "user '\(userName)' has no such token") }
                revoked = try await connection.execute("UPDATE auth_tokens SET revoked = 1 WHERE token_hash = ? AND revoked = 0", [.text(hash)])
            } else {
                revoked = try await connection.execute("UPDATE auth_tokens SET revoked = 1 WHERE user_id = ? AND revoked = 0", [.int(user.id)])
            }
            return RevokedTokens(user: user, revoked: revoked)
        }
        return (answer.user, answer.revoked)
    }

    /// Registers `pem`'s public key (and a user for it) and returns its key id; adding a key
    /// again returns the same id.
    package func addServerKey(pem: String, name: String?) async throws -> String {
        let (der, keyID) = try ServerKeyRules.parse(pem: pem)
        let now = clock()
        let recordName = "_" + RandomToken.hex(bytes: 16)
        return try await driver.write { connection in
            // The key's user is named after the key: a second `key add` of the key, also one
            // committing beside this one, inserts no user and finds the first's key.
            guard let userID = try await connection.scalarInt(
                "INSERT INTO users (name, record_name, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING RETURNING id",
                [.text(ServerKeyRules.userName(keyID: keyID)), .text(recordName), .int(now)])
            else {
                guard try await connection.first("SELECT 1 FROM server_keys WHERE key_id = ?", [.text(keyID)]) != nil else {
                    throw ServerError(.exists, "a user named after the key exists without the key")
                }
                return keyID
            }
            try await connection.execute("INSERT INTO server_keys (key_id, public_key, user_id, name, created_at) VALUES (?, ?, ?, ?, ?)",
                                         [.text(keyID), .text(Data(der).base64EncodedString()), .int(userID),
                                          .text(ServerKeyRules.label(name, keyID: keyID)), .int(now)])
            return keyID
        }
    }

    /// The key with this id and the user it acts as, or nil.
    package func serverKey(keyID: String) async throws -> ServerKey? {
        guard ServerKeyRules.wellFormedKeyID(keyID) else { return nil }
        let id = keyID.lowercased()
        return try await driver.readByKey { connection in
            try await connection.first(
                "SELECT u.id, u.name, u.record_name, k.public_key FROM server_keys k JOIN users u ON u.id = k.user_id WHERE k.key_id = ?",
                [.text(id)]
            ).map { ServerKey(keyID: id, publicKeyDER: Array(Data(base64Encoded: $0.text(3)) ?? Data()), user: User($0)) }
        }
    }

    /// The channel whose courier URL carries `token`, while the token that made it is live and it
    /// was used in the last 30 days. A use is written at most once an hour.
    package func courierChannel(token: String, container: String, environment: Environment) async throws -> PushToken? {
        let now = clock()
        // One statement: on PostgreSQL without the BEGIN and COMMIT round trips of a transaction,
        // which every poll of a courier paid.
        let found = try await driver.readByKey { connection in
            try await connection.first(
                """
                SELECT p.database_id, p.apns_environment, p.start_cursor, COALESCE(p.last_used_at, p.created_at), p.delivered_cursor
                FROM push_tokens p JOIN databases d ON d.id = p.database_id
                WHERE p.token = ? AND d.container = ? AND d.environment = ? AND
                """ + " " + CourierRules.liveCondition,
                [.text(token), .text(container), .text(environment.rawValue), .int(now), .int(now - CourierRules.unusedLifetimeMillis)])
        }
        guard let found else { return nil }
        if now - found.int(3) >= CourierRules.useRecordingMillis {
            _ = try await driver.write { connection in
                try await connection.execute("UPDATE push_tokens SET last_used_at = ? WHERE token = ?", [.int(now), .text(token)])
            }
        }
        return PushToken(token: token, apnsEnvironment: found.text(1), databaseID: found.int(0), startCursor: found.int(2),
                         deliveredCursor: found.optionalInt(4))
    }

    /// Moves the position of the courier's polls without a cursor to `cursor`, never back (two
    /// daemons answering one courier at once keep the further one).
    package func advanceCourierPosition(token: String, to cursor: Int64) async throws {
        _ = try await driver.write { connection in
            try await connection.execute(
                "UPDATE push_tokens SET delivered_cursor = ? WHERE token = ? AND COALESCE(delivered_cursor, start_cursor) < ?",
                [.int(cursor), .text(token), .int(cursor)])
        }
    }
}

/// The user whose tokens a revocation reached, and how many it revoked.
struct RevokedTokens: Sendable {
    var user: User
    var revoked: Int
}
