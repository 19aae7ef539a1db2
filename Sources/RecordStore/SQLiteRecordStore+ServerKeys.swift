import Foundation
import RecordModel
import SQLiteDB

extension SQLiteRecordStore {
    /// Registers `pem`'s public key (and a user for it) and returns its key id; adding a key
    /// again returns the same id.
    package func addServerKey(pem: String, name: String?) throws -> String {
        let (der, keyID) = try ServerKeyRules.parse(pem: pem)
        return try database.writeSync { connection in
            try connection.transaction {
                if try connection.scalarInt("SELECT 1 FROM server_keys WHERE key_id = ?", [.text(keyID)]) != nil { return keyID }
                let recordName = "_" + RandomToken.hex(bytes: 16)
                try connection.run("INSERT INTO users (name, record_name, created_at) VALUES (?, ?, ?)",
                                   [.text(ServerKeyRules.userName(keyID: keyID)), .text(recordName), .int(clock())])
                try connection.run("INSERT INTO server_keys (key_id, public_key, user_id, name, created_at) VALUES (?, ?, ?, ?, ?)",
                                   [.text(keyID), .text(Data(der).base64EncodedString()), .int(connection.lastInsertRowID),
                                    .text(ServerKeyRules.label(name, keyID: keyID)), .int(clock())])
                return keyID
            }
        }
    }

    package func serverKey(keyID: String) throws -> ServerKey? {
        guard ServerKeyRules.wellFormedKeyID(keyID) else { return nil }
        return try database.readSync { connection in
            try connection.first(
                """
                SELECT k.public_key, u.id, u.name, u.record_name FROM server_keys k JOIN users u ON u.id = k.user_id WHERE k.key_id = ?
                """, [.text(keyID.lowercased())]
            ) {
                ServerKey(keyID: keyID.lowercased(), publicKeyDER: Array(Data(base64Encoded: $0.text(0)) ?? Data()),
                          user: User(id: $0.int64(1), name: $0.text(2), recordName: $0.text(3)))
            }
        }
    }
}
