import Foundation
import PostgresNIO
import RecordModel
import RecordStore

extension PostgresRecordStore {
    package func addServerKey(pem: String, name: String?) async throws -> String {
        let (der, keyID) = try ServerKeyRules.parse(pem: pem)
        let now = clock()
        let userName = ServerKeyRules.userName(keyID: keyID), label = ServerKeyRules.label(name, keyID: keyID)
        let publicKey = Data(der).base64EncodedString()
        return try await write { connection in
            // Two `key add` of one key at once: the second waits here and finds the first's row.
            try await connection.query("SELECT pg_advisory_xact_lock(7270003, hashtext(\(keyID)))", logger: self.logger)
            if try await !connection.query("SELECT 1 FROM server_keys WHERE key_id = \(keyID)", logger: self.logger).collect().isEmpty {
                return keyID
            }
            let recordName = "_" + RandomToken.hex(bytes: 16)
            guard let userID = try await connection.query(
                "INSERT INTO users (name, record_name, created_at) VALUES (\(userName), \(recordName), \(now)) RETURNING id", logger: self.logger
            ).collect().first?.decode(Int64.self) else { throw ServerError(.internalError, "user row not created") }
            try await connection.query(
                "INSERT INTO server_keys (key_id, public_key, user_id, name, created_at) VALUES (\(keyID), \(publicKey), \(userID), \(label), \(now))",
                logger: self.logger)
            return keyID
        }
    }

    package func serverKey(keyID: String) async throws -> ServerKey? {
        guard ServerKeyRules.wellFormedKeyID(keyID) else { return nil }
        let id = keyID.lowercased()
        return try await read { connection in
            guard let row = try await connection.query(
                "SELECT k.public_key, u.id, u.name, u.record_name FROM server_keys k JOIN users u ON u.id = k.user_id WHERE k.key_id = \(id)",
                logger: self.logger
            ).collect().first else { return nil }
            let (publicKey, userID, name, recordName) = try row.decode((String, Int64, String, String).self)
            return ServerKey(keyID: id, publicKeyDER: Array(Data(base64Encoded: publicKey) ?? Data()),
                             user: User(id: userID, name: name, recordName: recordName))
        }
    }
}
