import RecordModel

// The administration commands' calls on the embedded store (`scorebookd user …`, `check`).
extension SQLiteStorage {
    package func userSummaries() async throws -> [UserSummary] { try await offload { try $0.userSummaries() } }
    package func editUser(name: String, email: String) async throws -> UserSummary { try await offload(write: true) { try $0.editUser(name: name, email: email) } }
    package func deleteUser(name: String) async throws -> UserDeletion { try await offload(write: true) { try $0.deleteUser(name: name) } }

    package func revokeTokens(userName: String, token: String?) async throws -> (user: User, revoked: Int) {
        let answer = try await offload(write: true) { try $0.revokeTokens(userName: userName, token: token) }
        return answer
    }

    package func setPasswordHash(userName: String, hash: String) async throws -> User {
        try await offload(write: true) { try $0.setPasswordHash(userName: userName, hash: hash) }
    }

    package func passwordCredential(login: String) async throws -> PasswordCredential? { try await offload { try $0.passwordCredential(login: login) } }

    package func checkIntegrity() async throws -> [String] { try await offload { try $0.checkIntegrity() } }
}
