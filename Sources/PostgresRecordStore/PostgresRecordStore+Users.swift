import Foundation
import PostgresNIO
import RecordModel
import RecordStore

// Users and their credentials, and their administration (`scorebookd user …`).
extension PostgresRecordStore {
    package func createUser(name: String, email: String?, tokenExpiresAt: Int64?) async throws -> (user: User, token: String) {
        try CredentialRules.validateUserName(name)
        let email = try email.map(ShareRules.normalizedEmail)
        let now = clock()
        let answer: UserAndToken = try await write { connection in
            let recordName = "_" + RandomToken.hex(bytes: 16)
            if let email, try await !connection.query("SELECT 1 FROM users WHERE email = \(email)", logger: self.logger).collect().isEmpty {
                throw ServerError(.exists, "another user has the email \(email)")
            }
            let inserted = try await connection.query(
                """
                INSERT INTO users (name, record_name, created_at, email) VALUES (\(name), \(recordName), \(now), \(email))
                ON CONFLICT (name) DO NOTHING RETURNING id
                """,
                logger: self.logger
            ).collect()
            guard let id = try inserted.first?.decode(Int64.self) else { throw ServerError(.exists, "user '\(name)' already exists") }
            let user = User(id: id, name: name, recordName: recordName)
            return UserAndToken(user: user, token: try await self.insertToken(for: user, expiresAt: tokenExpiresAt, connection, now: now))
        }
        return (answer.user, answer.token)
    }

    struct UserAndToken: Sendable {
        var user: User
        var token: String
    }

    /// The user named `name`, or `NOT_FOUND` saying so.
    func requireUser(named name: String, _ connection: PostgresConnection) async throws -> User {
        guard let row = try await connection.query("SELECT id, name, record_name FROM users WHERE name = \(name)", logger: logger)
            .collect().first
        else { throw TokenRules.noSuchUser(name) }
        let (id, userName, recordName) = try row.decode((Int64, String, String).self)
        return User(id: id, name: userName, recordName: recordName)
    }

    package func issueToken(userName: String, expiresAt: Int64?) async throws -> (user: User, token: String) {
        let now = clock()
        let answer: UserAndToken = try await write { connection in
            let user = try await self.requireUser(named: userName, connection)
            return UserAndToken(user: user, token: try await self.insertToken(for: user, expiresAt: expiresAt, connection, now: now))
        }
        return (answer.user, answer.token)
    }

    private func insertToken(for user: User, expiresAt: Int64?, _ connection: PostgresConnection, now: Int64) async throws -> String {
        let token = RandomToken.hex(bytes: 32)
        try await connection.query(
            """
            INSERT INTO auth_tokens (token_hash, user_id, created_at, expires_at) VALUES (\(TokenHash.hex(token)), \(user.id), \(now), \(expiresAt))
            """,
            logger: logger)
        return token
    }

    package func listUsers() async throws -> [User] {
        try await read { connection in
            try await connection.query("SELECT id, name, record_name FROM users ORDER BY name", logger: self.logger).collect().map {
                let (id, name, recordName) = try $0.decode((Int64, String, String).self)
                return User(id: id, name: name, recordName: recordName)
            }
        }
    }

    package func createAPIToken() async throws -> String {
        let token = RandomToken.hex(bytes: 32)
        let now = clock()
        try await write { connection in
            try await connection.query("INSERT INTO api_tokens (token_hash, created_at) VALUES (\(TokenHash.hex(token)), \(now))",
                                       logger: self.logger)
            return ()
        }
        return token
    }

    /// Not cached: a token revoked through any daemon fails on every daemon at once. Its last
    /// use is written at most once a minute per daemon (`TokenUseRecorder`), after the read.
    package func authenticate(bearerToken: String) async throws -> User? {
        guard CredentialRules.isPlausibleBearerToken(bearerToken) else { return nil }
        let hash = TokenHash.hex(bearerToken)
        let now = clock()
        let found: AuthenticatedToken? = try await read { connection in
            guard let row = try await connection.query(
                """
                SELECT u.id, u.name, u.record_name, t.expires_at FROM auth_tokens t JOIN users u ON u.id = t.user_id
                WHERE t.token_hash = \(hash) AND t.revoked = 0
                """, logger: self.logger
            ).collect().first else { return nil }
            let (id, name, recordName, expiresAt) = try row.decode((Int64, String, String, Int64?).self)
            return AuthenticatedToken(user: User(id: id, name: name, recordName: recordName), expiresAt: expiresAt)
        }
        guard let found else { return nil }
        if TokenRules.isExpired(found.expiresAt, now: now) { throw TokenRules.expired() }
        if tokenUses.shouldRecord(tokenHash: hash, now: now) {
            _ = try? await write { connection in
                try await connection.query("UPDATE auth_tokens SET last_used_at = \(now) WHERE token_hash = \(hash)", logger: self.logger)
                return ()
            }
        }
        return found.user
    }

    struct AuthenticatedToken: Sendable {
        var user: User
        var expiresAt: Int64?
    }

    package func authenticate(apiToken: String, webAuthToken: String) async throws -> User? {
        guard try await isValidAPIToken(apiToken) else { return nil }
        return try await authenticate(bearerToken: webAuthToken)
    }

    package func isValidAPIToken(_ apiToken: String) async throws -> Bool {
        guard CredentialRules.isWellFormedAPIToken(apiToken) else { return false }
        let hash = TokenHash.hex(apiToken.lowercased())
        return try await read { connection in
            try await connection.query("SELECT 1 FROM api_tokens WHERE token_hash = \(hash)", logger: self.logger).collect().isEmpty == false
        }
    }

    // MARK: Administration

    /// One of the statements shared with SQLite, whose single argument is `?1`.
    static func sharedStatement(_ sql: String, _ argument: Int64) -> PostgresQuery {
        var binds = PostgresBindings()
        binds.append(argument)
        return PostgresQuery(unsafeSQL: sql.replacingOccurrences(of: "?1", with: "$1"), binds: binds)
    }

    static func sharedStatement(_ sql: String, _ argument: String) -> PostgresQuery {
        var binds = PostgresBindings()
        binds.append(argument)
        return PostgresQuery(unsafeSQL: sql.replacingOccurrences(of: "?1", with: "$1"), binds: binds)
    }

    package func userSummaries() async throws -> [UserSummary] {
        let now = clock()
        return try await read { connection in
            try await connection.query(PostgresRecordStore.sharedStatement(UserListing.sql, now), logger: self.logger).collect().map {
                let (id, name, recordName, email, live, lastUsed) = try $0.decode((Int64, String, String, String?, Int64, Int64?).self)
                return UserSummary(user: User(id: id, name: name, recordName: recordName), email: email, liveTokens: Int(live), lastUsed: lastUsed)
            }
        }
    }

    package func editUser(name: String, email: String) async throws -> UserSummary {
        let email = try ShareRules.normalizedEmail(email)
        try await write { connection in
            let user = try await self.requireUser(named: name, connection)
            let other = try await connection.query("SELECT id FROM users WHERE email = \(email)", logger: self.logger).collect().first?
                .decode(Int64.self)
            if let other, other != user.id { throw ServerError(.exists, "another user has the email \(email)") }
            try await connection.query("UPDATE users SET email = \(email) WHERE id = \(user.id)", logger: self.logger)
            return ()
        }
        guard let summary = try await userSummaries().first(where: { $0.user.name == name }) else { throw TokenRules.noSuchUser(name) }
        return summary
    }

    /// As `SQLiteRecordStore.deleteUser`, in one transaction. Tokens are not cached here, so
    /// every daemon refuses the user's tokens from its next request.
    package func deleteUser(name: String) async throws -> UserDeletion {
        try await write { connection in
            let user = try await self.requireUser(named: name, connection)
            func count(_ sql: String) async throws -> Int {
                Int(try await connection.query(PostgresRecordStore.sharedStatement(sql, user.id), logger: self.logger).collect().first?
                    .decode(Int64.self) ?? 0)
            }
            let deletion = UserDeletion(user: user, zones: try await count(UserRemoval.liveZoneCount), shares: try await count(UserRemoval.shareCount))
            for statement in UserRemoval.statements {
                try await connection.query(PostgresRecordStore.sharedStatement(statement, user.id), logger: self.logger)
            }
            return deletion
        }
    }
}
