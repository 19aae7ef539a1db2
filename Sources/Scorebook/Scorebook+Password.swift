import RecordModel

/// The account's web sign-in password, changed on its server (`scorebook account password`).
extension Scorebook {
    /// `current` may be empty while the account has no password yet.
    public func changePassword(current: String, new: String) async throws {
        let client = try accountClient()
        let body: JSONValue = ["currentPassword": .string(current), "newPassword": .string(new)]
        _ = try await talking { try await client.call("users/password", body, database: "private") }
    }
}
