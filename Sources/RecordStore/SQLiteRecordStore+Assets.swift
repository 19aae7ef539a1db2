import Foundation
import RecordModel
import SQLiteDB

/// Assets on SQLite: the bookkeeping in the database, the bytes in files under `assets/` beside it
/// (one directory per scope, one file per checksum), written once and never changed, so a backup
/// hard-links them and a download reads them without the writer.
extension SQLiteRecordStore {
    /// `assets/` next to the database file.
    package var assetDirectory: String { ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent("assets") }

    /// Where uploads arrive: on the assets' file system, so keeping one is a rename.
    package func assetStagingDirectory() throws -> String {
        let directory = (assetDirectory as NSString).appendingPathComponent("incoming")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    package func assetFilePath(scopeKey: String, checksum: String) -> String {
        let scope = AssetScope.directoryName(forKey: scopeKey)
        return ((assetDirectory as NSString).appendingPathComponent(scope) as NSString).appendingPathComponent(checksum)
    }

    package func assetSigningSecret() throws -> [UInt8] {
        let hex = try database.writeSync { connection in
            try connection.transaction { () throws -> String in
                try connection.run("INSERT OR IGNORE INTO meta (key, value) VALUES ('asset_secret', ?)", [.text(RandomToken.hex(bytes: 32))])
                return try connection.first("SELECT value FROM meta WHERE key = 'asset_secret'", [], { $0.text(0) }) ?? ""
            }
        }
        return Array(hex.utf8)
    }

    package func createAssetUploads(_ uploads: [AssetUpload]) throws {
        try database.writeSync { connection in
            try connection.transaction {
                for upload in uploads {
                    try connection.run("INSERT INTO asset_uploads (upload_id, user_id, scope, binding, created_at) VALUES (?, ?, ?, ?, ?)",
                                       [.text(upload.id), .int(upload.userID), .text(upload.scopeKey), .text(upload.bindingKey), .int(upload.createdAt)])
                }
            }
        }
    }

    package func claimAssetUpload(id: String, createdAfter: Int64) throws -> AssetUpload? {
        let now = clock()
        return try database.writeSync { connection in
            try connection.transaction {
                let changed = try connection.run(
                    "UPDATE asset_uploads SET claimed_at = ? WHERE upload_id = ? AND claimed_at IS NULL AND created_at > ?",
                    [.int(now), .text(id), .int(createdAfter)])
                guard changed == 1 else { return nil }
                return try connection.first("SELECT \(SQLiteRecordStore.uploadColumns) FROM asset_uploads WHERE upload_id = ?", [.text(id)],
                                            SQLiteRecordStore.upload)
            }
        }
    }

    package func completeAssetUpload(id: String, blob: AssetBlob, stagedFile path: String, receipt: String) throws {
        let now = clock()
        let destination = assetFilePath(scopeKey: blob.scopeKey, checksum: blob.checksum)
        try database.writeSync { connection in
            try connection.transaction {
                // Under the writer lock: the sweep, which deletes files under it too, cannot remove
                // the file between this check and the row below.
                if FileManager.default.fileExists(atPath: destination) {
                    try? FileManager.default.removeItem(atPath: path)
                } else {
                    try FileManager.default.createDirectory(
                        atPath: (destination as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                    try FileManager.default.moveItem(atPath: path, toPath: destination)
                }
                // Bytes uploaded again start their unattached (or released) time again.
                try connection.run(
                    """
                    INSERT INTO asset_blobs (scope, checksum, size, created_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (scope, checksum) DO UPDATE SET created_at = excluded.created_at, unreferenced_since = NULL
                    """, [.text(blob.scopeKey), .text(blob.checksum), .int(blob.size), .int(now)])
                try connection.run(
                    "UPDATE asset_uploads SET checksum = ?, size = ?, receipt = ?, uploaded_at = ? WHERE upload_id = ?",
                    [.text(blob.checksum), .int(blob.size), .text(receipt), .int(now), .text(id)])
            }
        }
    }

    package func assetUploads(receipts: [String]) throws -> [AssetUpload] {
        try database.readSync { connection in
            try receipts.compactMap { receipt in
                try connection.first("SELECT \(SQLiteRecordStore.uploadColumns) FROM asset_uploads WHERE receipt = ?", [.text(receipt)],
                                     SQLiteRecordStore.upload)
            }
        }
    }

    package func hasUploadedAsset(userID: Int64, scopeKey: String, checksum: String) throws -> Bool {
        try database.readSync { connection in
            try connection.scalarInt(
                """
                SELECT 1 FROM asset_uploads u JOIN asset_blobs b ON b.scope = u.scope AND b.checksum = u.checksum
                WHERE u.scope = ? AND u.checksum = ? AND u.user_id = ? LIMIT 1
                """, [.text(scopeKey), .text(checksum), .int(userID)]) != nil
        }
    }

    package func markAssetsAttached(receipts: [String]) throws {
        guard !receipts.isEmpty else { return }
        let now = clock()
        try database.writeSync { connection in
            try connection.transaction {
                for receipt in receipts {
                    try connection.run("UPDATE asset_uploads SET attached_at = ? WHERE receipt = ? AND attached_at IS NULL", [.int(now), .text(receipt)])
                    try connection.run(
                        """
                        UPDATE asset_blobs SET attached = 1, unreferenced_since = NULL
                        WHERE (scope, checksum) IN (SELECT scope, checksum FROM asset_uploads WHERE receipt = ?)
                        """, [.text(receipt)])
                }
            }
        }
    }

    package func assetBlob(scopeKey: String, checksum: String) throws -> AssetBlob? {
        try database.readSync { connection in
            try connection.first("SELECT size FROM asset_blobs WHERE scope = ? AND checksum = ?", [.text(scopeKey), .text(checksum)]) {
                AssetBlob(scopeKey: scopeKey, checksum: checksum, size: $0.int64(0))
            }
        }
    }

    /// Every (scope key, hex checksum) a live record of a live zone refers to, with where.
    func referencedAssets(_ connection: SQLiteConnection) throws -> [(scopeKey: String, checksum: String, place: String)] {
        var found: [(String, String, String)] = []
        try connection.query(
            """
            SELECT d.container, d.environment, d.user_id, u.record_name, z.name, r.name, r.fields
            FROM records r JOIN zones z ON z.id = r.zone_id AND z.deleted = 0
            JOIN databases d ON d.id = z.database_id LEFT JOIN users u ON u.id = d.user_id
            WHERE r.deleted = 0 AND instr(r.fields, '"ASSETID') > 0
            """
        ) { row in
            guard let environment = Environment(rawValue: row.text(1)) else { return }
            let owner = row.int64(2) == DatabaseScope.publicOwnerID ? DatabaseScope.publicOwnerRecordName : row.text(3)
            let scope = AssetScope(container: row.text(0), environment: environment, ownerRecordName: owner)
            for (field, checksum) in AssetFields.checksums(inFieldsJSON: row.blob(6)) {
                found.append((scope.key, checksum, "\(row.text(4))/\(row.text(5)).\(field)"))
            }
        }
        return found
    }

    package func sweepAssets(releasedMilliseconds: Int64) throws -> Int {
        let now = clock()
        return try database.writeSync { connection in
            try connection.transaction {
                try connection.run("DELETE FROM asset_uploads WHERE uploaded_at IS NULL AND created_at < ?",
                                   [.int(now - AssetLimits.uploadURLMilliseconds - 3_600_000)])
                try connection.run("DELETE FROM asset_uploads WHERE attached_at IS NULL AND uploaded_at < ?",
                                   [.int(now - AssetLimits.unattachedMilliseconds)])
                let referenced = Set(try referencedAssets(connection).map { $0.scopeKey + "\u{1F}" + $0.checksum })
                struct Row { var scope: String, checksum: String, attached: Bool, createdAt: Int64, unreferencedSince: Int64? }
                let rows = try connection.map("SELECT scope, checksum, attached, created_at, unreferenced_since FROM asset_blobs") {
                    Row(scope: $0.text(0), checksum: $0.text(1), attached: $0.int64(2) != 0, createdAt: $0.int64(3),
                        unreferencedSince: $0.isNull(4) ? nil : $0.int64(4))
                }
                var removed = 0
                for row in rows {
                    let arguments: [SQLValue] = [.text(row.scope), .text(row.checksum)]
                    switch AssetSweepRules.decide(referenced: referenced.contains(row.scope + "\u{1F}" + row.checksum), attached: row.attached,
                                                  createdAt: row.createdAt, unreferencedSince: row.unreferencedSince, now: now,
                                                  releasedMilliseconds: releasedMilliseconds) {
                    case .keep: break
                    case .markReferenced:
                        try connection.run("UPDATE asset_blobs SET attached = 1, unreferenced_since = NULL WHERE scope = ? AND checksum = ?", arguments)
                    case .markUnreferenced:
                        try connection.run("UPDATE asset_blobs SET unreferenced_since = ? WHERE scope = ? AND checksum = ?", [.int(now)] + arguments)
                    case .remove:
                        try connection.run("DELETE FROM asset_blobs WHERE scope = ? AND checksum = ?", arguments)
                        try connection.run("DELETE FROM asset_uploads WHERE scope = ? AND checksum = ?", arguments)
                        try? FileManager.default.removeItem(atPath: assetFilePath(scopeKey: row.scope, checksum: row.checksum))
                        removed += 1
                    }
                }
                return removed
            }
        }
    }

    /// `scorebookd check`: every asset a live record refers to is stored, whole, with its checksum.
    func assetProblems(_ connection: SQLiteConnection) throws -> [String] {
        var problems: [String] = []
        var verified: [String: Bool] = [:]
        for reference in try referencedAssets(connection) {
            let key = reference.scopeKey + "\u{1F}" + reference.checksum
            if verified[key] == nil {
                let size = try connection.first("SELECT size FROM asset_blobs WHERE scope = ? AND checksum = ?",
                                                [.text(reference.scopeKey), .text(reference.checksum)]) { $0.int64(0) }
                let path = assetFilePath(scopeKey: reference.scopeKey, checksum: reference.checksum)
                verified[key] = size != nil && SQLiteRecordStore.fileMatches(path: path, checksum: reference.checksum, size: size!)
            }
            if verified[key] == false, problems.count < 20 {
                problems.append("asset \(reference.checksum.prefix(12))… of \(reference.place) is missing or does not match its checksum")
            }
        }
        return problems
    }

    static func fileMatches(path: String, checksum: String, size: Int64) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        var digest = AssetDigest()
        while let data = try? handle.read(upToCount: 1 << 20), !data.isEmpty {
            data.withUnsafeBytes { digest.update($0) }
        }
        return digest.size == size && digest.finish() == checksum
    }

    /// Hard-links (or copies) every stored asset into `directory`, beside a backup of the database.
    func backupAssets(to directory: String) throws -> Int {
        let blobs = try database.readSync { connection in
            try connection.map("SELECT scope, checksum FROM asset_blobs") { ($0.text(0), $0.text(1)) }
        }
        var copied = 0
        for (scope, checksum) in blobs {
            let source = assetFilePath(scopeKey: scope, checksum: checksum)
            guard FileManager.default.fileExists(atPath: source) else { continue }
            let scopeDirectory = (directory as NSString).appendingPathComponent(AssetScope.directoryName(forKey: scope))
            try FileManager.default.createDirectory(atPath: scopeDirectory, withIntermediateDirectories: true)
            let destination = (scopeDirectory as NSString).appendingPathComponent(checksum)
            do {
                try FileManager.default.linkItem(atPath: source, toPath: destination)
            } catch {
                try FileManager.default.copyItem(atPath: source, toPath: destination)
            }
            copied += 1
        }
        return copied
    }

    static let uploadColumns = "upload_id, user_id, scope, binding, created_at, claimed_at, checksum, size, receipt, uploaded_at, attached_at"

    static func upload(_ row: SQLiteStatement) -> AssetUpload {
        var upload = AssetUpload(id: row.text(0), userID: row.int64(1), scopeKey: row.text(2), bindingKey: row.text(3), createdAt: row.int64(4))
        upload.claimedAt = row.isNull(5) ? nil : row.int64(5)
        upload.checksum = row.isNull(6) ? nil : row.text(6)
        upload.size = row.isNull(7) ? nil : row.int64(7)
        upload.receipt = row.isNull(8) ? nil : row.text(8)
        upload.uploadedAt = row.isNull(9) ? nil : row.int64(9)
        upload.attachedAt = row.isNull(10) ? nil : row.int64(10)
        return upload
    }
}

/// What the sweep does with one stored asset (the same rules on both backends).
package enum AssetSweepRules {
    package enum Decision: Equatable { case keep, markReferenced, markUnreferenced, remove }

    package static func decide(referenced: Bool, attached: Bool, createdAt: Int64, unreferencedSince: Int64?, now: Int64,
                               releasedMilliseconds: Int64) -> Decision
    {
        if referenced { return attached && unreferencedSince == nil ? .keep : .markReferenced }
        if !attached { return createdAt < now - AssetLimits.unattachedMilliseconds ? .remove : .keep }
        guard let since = unreferencedSince else { return .markUnreferenced }
        return since < now - releasedMilliseconds ? .remove : .keep
    }
}
