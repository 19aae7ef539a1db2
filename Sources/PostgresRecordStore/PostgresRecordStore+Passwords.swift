import PostgresNIO
import RecordModel
import RecordStore

// Web sign-in passwords on PostgreSQL, as `SQLiteRecordStore+Users` keeps them on SQLite.
extension PostgresRecordStore {
    package func setPasswordHash(userName: String, hash: String) async throws -> User {
        try await write { connection in
            let user = try await self.requireUser(named: userName, connection)
            try await connection.query("UPDATE users SET password_hash = \(hash) WHERE id = \(user.id)", logger: self.logger)
            return user
        }
    }

    package func passwordCredential(login: String) async throws -> PasswordCredential? {
        try await read { connection in
            let rows = try await connection.query(PostgresRecordStore.sharedStatement(PasswordCredential.lookupSQL, login), logger: self.logger)
                .collect()
            guard let row = rows.first else { return nil }
            let (id, name, recordName, hash) = try row.decode((Int64, String, String, String?).self)
            return PasswordCredential(user: User(id: id, name: name, recordName: recordName), hash: hash)
        }
    }
}
