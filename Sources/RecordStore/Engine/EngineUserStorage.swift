import RecordModel

/// A store whose users and credentials are the engine's scripts: both backends conform, so
/// their `RecordStorage` methods for users, tokens, keys and courier channels are these.
package protocol EngineUserStorage {
    var engine: StoreEngine { get }
    /// Decides when a token's last use is written.
    var tokenUses: TokenUseRecorder { get }
}

extension EngineUserStorage {
    package func createUser(name: String, email: String?, tokenExpiresAt: Int64?) async throws -> (user: User, token: String) {
        try await engine.createUser(name: name, email: email, tokenExpiresAt: tokenExpiresAt)
    }

    package func issueToken(userName: String, expiresAt: Int64?) async throws -> (user: User, token: String) {
        try await engine.issueToken(userName: userName, expiresAt: expiresAt)
    }

    package func listUsers() async throws -> [User] { try await engine.listUsers() }
    package func userSummaries() async throws -> [UserSummary] { try await engine.userSummaries() }
    package func editUser(name: String, email: String) async throws -> UserSummary { try await engine.editUser(name: name, email: email) }
    package func deleteUser(name: String) async throws -> UserDeletion { try await engine.deleteUser(name: name) }

    package func revokeTokens(userName: String, token: String?) async throws -> (user: User, revoked: Int) {
        try await engine.revokeTokens(userName: userName, token: token)
    }

    package func setPasswordHash(userName: String, hash: String) async throws -> User { try await engine.setPasswordHash(userName: userName, hash: hash) }
    package func passwordCredential(login: String) async throws -> PasswordCredential? { try await engine.passwordCredential(login: login) }
    package func createAPIToken() async throws -> String { try await engine.createAPIToken() }
    package func authenticate(bearerToken: String) async throws -> User? { try await engine.authenticate(bearerToken: bearerToken, uses: tokenUses) }

    package func authenticate(apiToken: String, webAuthToken: String) async throws -> User? {
        try await engine.authenticate(apiToken: apiToken, webAuthToken: webAuthToken, uses: tokenUses)
    }

    package func isValidAPIToken(_ apiToken: String) async throws -> Bool { try await engine.isValidAPIToken(apiToken) }
    package func addServerKey(pem: String, name: String?) async throws -> String { try await engine.addServerKey(pem: pem, name: name) }
    package func serverKey(keyID: String) async throws -> ServerKey? { try await engine.serverKey(keyID: keyID) }

    package func courierChannel(token: String, container: String, environment: Environment) async throws -> PushToken? {
        try await engine.courierChannel(token: token, container: container, environment: environment)
    }

    package func advanceCourierPosition(token: String, to cursor: Int64) async throws {
        try await engine.advanceCourierPosition(token: token, to: cursor)
    }
}
