import RecordModel

/// Users, their tokens and web sign-in passwords, and their administration (`scorebookd user …`).
extension StoreEngine {
    /// `tokenExpiresAt`: when the first token stops working (nil: never).
    package func createUser(name: String, email: String?, tokenExpiresAt: Int64?) async throws -> (user: User, token: String) {
        try CredentialRules.validateUserName(name)
        let email = try email.map(ShareRules.normalizedEmail)
        let now = clock()
        let answer = try await driver.write { connection -> UserAndToken in
            if let email, try await connection.first("SELECT 1 FROM users WHERE email = ?", [.text(email)]) != nil {
                throw ServerError(.exists, "another user has the email \(email)")
            }
            let recordName = "_" + RandomToken.hex(bytes: 16)
            // A name taken (also by a `user create` committing beside this one) inserts nothing.
            guard let id = try await connection.scalarInt(
                "INSERT INTO users (name, record_name, created_at, email) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING RETURNING id",
                [.text(name), .text(recordName), .int(now), email.map { .text($0) } ?? .null])
            else { throw ServerError(.exists, "user '\(name)' already exists") }
            let user = User(id: id, name: name, recordName: recordName)
            return UserAndToken(user: user, token: try await Self.insertToken(for: user, expiresAt: tokenExpiresAt, now: now, connection))
        }
        return (answer.user, answer.token)
    }

    package func issueToken(userName: String, expiresAt: Int64?) async throws -> (user: User, token: String) {
        let now = clock()
        let answer = try await driver.write { connection -> UserAndToken in
            let user = try await Self.requireUser(named: userName, connection)
            return UserAndToken(user: user, token: try await Self.insertToken(for: user, expiresAt: expiresAt, now: now, connection))
        }
        return (answer.user, answer.token)
    }

    package func listUsers() async throws -> [User] {
        try await driver.read { connection in
            try await connection.rows("SELECT id, name, record_name FROM users ORDER BY name").map { User($0) }
        }
    }

    /// Every user with its email, live tokens (neither revoked nor expired) and last token use.
    package func userSummaries() async throws -> [UserSummary] {
        let now = clock()
        return try await driver.read { connection in
            try await connection.rows(UserListing.sql, [.int(now)]).map {
                UserSummary(user: User($0), email: $0.optionalText(3), liveTokens: Int($0.int(4)), lastUsed: $0.optionalInt(5))
            }
        }
    }

    /// Gives the user `name` a new email (how others share with it); another user's email is `EXISTS`.
    package func editUser(name: String, email: String) async throws -> UserSummary {
        let email = try ShareRules.normalizedEmail(email)
        try await driver.write { connection in
            let user = try await Self.requireUser(named: name, connection)
            if let other = try await connection.scalarInt("SELECT id FROM users WHERE email = ?", [.text(email)]), other != user.id {
                throw ServerError(.exists, "another user has the email \(email)")
            }
            try await connection.execute("UPDATE users SET email = ? WHERE id = ?", [.text(email), .int(user.id)])
        }
        guard let summary = try await userSummaries().first(where: { $0.user.name == name }) else { throw TokenRules.noSuchUser(name) }
        return summary
    }

    /// Deletes the user, its tokens, keys and uploads, its private databases with their zones,
    /// subscriptions and notifications, the shares of those zones, and its places in other users'
    /// shares, in one transaction. Participants find the shared zones gone at their next sync.
    package func deleteUser(name: String) async throws -> UserDeletion {
        // The subscriptions kept in memory go too: the user's databases' went with it.
        defer { subscriptionCache?.invalidateAll() }
        return try await driver.write { connection in
            let user = try await Self.requireUser(named: name, connection)
            let arguments: [SQLValue] = [.int(user.id)]
            let zones = try await connection.scalarInt(UserRemoval.liveZoneCount, arguments) ?? 0
            let shares = try await connection.scalarInt(UserRemoval.shareCount, arguments) ?? 0
            for statement in UserRemoval.statements { try await connection.execute(statement, arguments) }
            return UserDeletion(user: user, zones: Int(zones), shares: Int(shares))
        }
    }

    /// Stores the user's web sign-in password hash.
    package func setPasswordHash(userName: String, hash: String) async throws -> User {
        try await driver.write { connection in
            let user = try await Self.requireUser(named: userName, connection)
            try await connection.execute("UPDATE users SET password_hash = ? WHERE id = ?", [.text(hash), .int(user.id)])
            return user
        }
    }

    /// The user whose name, or else email, is `login`, with its password hash.
    package func passwordCredential(login: String) async throws -> PasswordCredential? {
        try await driver.read { connection in
            try await connection.first(PasswordCredential.lookupSQL, Array(repeating: .text(login), count: PasswordCredential.lookupArguments))
                .map { PasswordCredential(user: User($0), hash: $0.optionalText(3)) }
        }
    }

    // MARK: Helpers

    /// The user named `name`, or `NOT_FOUND` saying so.
    static func requireUser(named name: String, _ connection: any StoreConnection) async throws -> User {
        guard let row = try await connection.first("SELECT id, name, record_name FROM users WHERE name = ?", [.text(name)]) else {
            throw TokenRules.noSuchUser(name)
        }
        return User(row)
    }

    private static func insertToken(for user: User, expiresAt: Int64?, now: Int64, _ connection: any StoreConnection) async throws -> String {
        let token = RandomToken.hex(bytes: 32)
        try await connection.execute("INSERT INTO auth_tokens (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                                     [.text(TokenHash.hex(token)), .int(user.id), .int(now), expiresAt.map { .int($0) } ?? .null])
        return token
    }
}

/// A user and the token just issued to it (a tuple is not `Sendable` across the driver).
struct UserAndToken: Sendable {
    var user: User
    var token: String
}

extension User {
    /// Columns `id, name, record_name` of a `users` row.
    init(_ row: StoreRow) { self.init(id: row.int(0), name: row.text(1), recordName: row.text(2)) }
}
