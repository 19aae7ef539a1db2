import Foundation
import RecordModel
import SQLiteDB

// `scorebookd user list | edit | delete` on the embedded store.
extension SQLiteRecordStore {
    /// The user named `name`, or `NOT_FOUND` saying so.
    func requireUser(named name: String, _ connection: SQLiteConnection) throws -> User {
        guard let user = try connection.first("SELECT id, name, record_name FROM users WHERE name = ?", [.text(name)], {
            User(id: $0.int64(0), name: $0.text(1), recordName: $0.text(2))
        }) else { throw TokenRules.noSuchUser(name) }
        return user
    }

    /// Every user with its email, live tokens (neither revoked nor expired) and last token use.
    package func userSummaries() throws -> [UserSummary] {
        let now = clock()
        return try database.readSync { connection in
            try connection.map(UserListing.sql, [.int(now)]) {
                UserSummary(user: User(id: $0.int64(0), name: $0.text(1), recordName: $0.text(2)), email: $0.optionalText(3),
                            liveTokens: Int($0.int64(4)), lastUsed: $0.optionalInt64(5))
            }
        }
    }

    /// Gives the user `name` a new email (how others share with it); another user's email is `EXISTS`.
    package func editUser(name: String, email: String) throws -> UserSummary {
        let email = try ShareRules.normalizedEmail(email)
        try database.writeSync { connection in
            try connection.transaction {
                let user = try requireUser(named: name, connection)
                if let other = try connection.scalarInt("SELECT id FROM users WHERE email = ?", [.text(email)]), other != user.id {
                    throw ServerError(.exists, "another user has the email \(email)")
                }
                try connection.run("UPDATE users SET email = ? WHERE id = ?", [.text(email), .int(user.id)])
            }
        }
        guard let summary = try userSummaries().first(where: { $0.user.name == name }) else { throw TokenRules.noSuchUser(name) }
        return summary
    }

    /// Deletes the user, its tokens, keys and uploads, its private databases with their zones,
    /// subscriptions and notifications, the shares of those zones, and its places in other users'
    /// shares, in one transaction. Participants find the shared zones gone at their next sync.
    package func deleteUser(name: String) throws -> UserDeletion {
        let deletion = try database.writeSync { connection in
            try connection.transaction {
                let user = try requireUser(named: name, connection)
                let arguments: [SQLValue] = [.int(user.id)]
                let zones = try connection.scalarInt(UserRemoval.liveZoneCount, arguments) ?? 0
                let shares = try connection.scalarInt(UserRemoval.shareCount, arguments) ?? 0
                for statement in UserRemoval.statements { try connection.run(statement, arguments) }
                try countRevocation(connection)
                return UserDeletion(user: user, zones: Int(zones), shares: Int(shares))
            }
        }
        subscriptionCache.invalidateAll()
        return deletion
    }

    /// Stores the user's web sign-in password hash.
    package func setPasswordHash(userName: String, hash: String) throws -> User {
        try database.writeSync { connection in
            try connection.transaction {
                let user = try requireUser(named: userName, connection)
                try connection.run("UPDATE users SET password_hash = ? WHERE id = ?", [.text(hash), .int(user.id)])
                return user
            }
        }
    }

    package func passwordCredential(login: String) throws -> PasswordCredential? {
        try database.readSync { connection in
            try connection.first(PasswordCredential.lookupSQL, [.text(login)]) {
                PasswordCredential(user: User(id: $0.int64(0), name: $0.text(1), recordName: $0.text(2)), hash: $0.optionalText(3))
            }
        }
    }
}
