import Foundation
import RecordModel

/// Where a backend keeps assets' bytes: files beside the database (SQLite), chunk rows in it
/// (PostgreSQL). The engine keeps the bookkeeping (`asset_uploads`, `asset_blobs`) and the rules,
/// and calls these in the same transaction.
package protocol AssetByteStore: Sendable {
    /// Keeps the staged file's bytes as `blob`'s unless they are kept already; `recorded` tells
    /// that this transaction recorded the blob first. The engine removes the staged file after.
    func keep(_ blob: AssetBlob, stagedFile path: String, recorded: Bool, _ connection: any StoreConnection) async throws
    /// Removes the bytes of blobs whose rows this transaction deleted.
    func remove(_ blobs: [AssetBlob], _ connection: any StoreConnection) async throws
    /// Whether the kept bytes are whole: `blob.size` long with `blob.checksum`.
    func matches(_ blob: AssetBlob, _ connection: any StoreConnection) async throws -> Bool
}

/// The assets' bookkeeping: upload URLs and their receipts, the blobs of each scope, and the
/// sweep that removes what no record keeps.
extension StoreEngine {
    /// The secret that signs download URLs, made by the first daemon that asks.
    package func assetSigningSecret() async throws -> [UInt8] {
        let fresh = RandomToken.hex(bytes: 32)
        let hex = try await driver.write { connection in
            try await connection.execute("INSERT INTO meta (key, value) VALUES ('asset_secret', ?) ON CONFLICT (key) DO NOTHING", [.text(fresh)])
            return try await connection.first("SELECT value FROM meta WHERE key = 'asset_secret'")?.text(0) ?? fresh
        }
        return Array(hex.utf8)
    }

    package func createAssetUploads(_ uploads: [AssetUpload]) async throws {
        guard !uploads.isEmpty else { return }
        let rows = uploads.map { upload -> [SQLValue] in
            [.text(upload.id), .int(upload.userID), .text(upload.scopeKey), .text(upload.bindingKey), .int(upload.createdAt)]
        }
        try await driver.write { connection in
            try await connection.insertRows(into: "asset_uploads", columns: [
                StoreColumn("upload_id", .text), StoreColumn("user_id", .integer), StoreColumn("scope", .text),
                StoreColumn("binding", .text), StoreColumn("created_at", .integer),
            ], rows: rows)
        }
    }

    /// Spends the upload URL: only once, and only while it is younger than `createdAfter`.
    package func claimAssetUpload(id: String, createdAfter: Int64) async throws -> AssetUpload? {
        let now = clock()
        return try await driver.write { connection in
            try await connection.first(
                "UPDATE asset_uploads SET claimed_at = ? WHERE upload_id = ? AND claimed_at IS NULL AND created_at > ? RETURNING " + Self.uploadColumns,
                [.int(now), .text(id), .int(createdAfter)]
            ).map(Self.upload)
        }
    }

    /// Records the upload's bytes (bytes uploaded again start their unattached, or released,
    /// time again) and gives the upload its receipt; the staged file is gone after.
    package func completeAssetUpload(id: String, blob: AssetBlob, stagedFile path: String, receipt: String,
                                     bytes: any AssetByteStore) async throws
    {
        let now = clock()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let key: [SQLValue] = [.text(blob.scopeKey), .text(blob.checksum)]
        try await driver.write { connection in
            // A concurrent upload of the same bytes waits on this row, then finds them recorded.
            let recorded = try await connection.first(
                "INSERT INTO asset_blobs (scope, checksum, size, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (scope, checksum) DO NOTHING RETURNING 1",
                key + [.int(blob.size), .int(now)]) != nil
            if !recorded {
                try await connection.execute("UPDATE asset_blobs SET created_at = ?, unreferenced_since = NULL WHERE scope = ? AND checksum = ?",
                                             [.int(now)] + key)
            }
            try await bytes.keep(blob, stagedFile: path, recorded: recorded, connection)
            try await connection.execute("UPDATE asset_uploads SET checksum = ?, size = ?, receipt = ?, uploaded_at = ? WHERE upload_id = ?",
                                         [.text(blob.checksum), .int(blob.size), .text(receipt), .int(now), .text(id)])
        }
    }

    package func assetUploads(receipts: [String]) async throws -> [AssetUpload] {
        guard !receipts.isEmpty else { return [] }
        return try await driver.read { connection in
            try await connection.rows("SELECT \(Self.uploadColumns) FROM asset_uploads WHERE " + connection.dialect.isInJSONArray("receipt"),
                                      [.text(JSONArgument.array(receipts))]).map(Self.upload)
        }
    }

    package func hasUploadedAsset(userID: Int64, scopeKey: String, checksum: String) async throws -> Bool {
        try await driver.read { connection in
            try await connection.first(
                """
                SELECT 1 FROM asset_uploads u JOIN asset_blobs b ON b.scope = u.scope AND b.checksum = u.checksum
                WHERE u.scope = ? AND u.checksum = ? AND u.user_id = ? LIMIT 1
                """, [.text(scopeKey), .text(checksum), .int(userID)]) != nil
        }
    }

    /// Spends the receipts and marks their bytes attached: two statements however many.
    package func markAssetsAttached(receipts: [String]) async throws {
        guard !receipts.isEmpty else { return }
        let now = clock()
        let names: SQLValue = .text(JSONArgument.array(receipts))
        try await driver.write { connection in
            let spent = connection.dialect.isInJSONArray("receipt")
            try await connection.execute("UPDATE asset_uploads SET attached_at = ? WHERE attached_at IS NULL AND " + spent, [.int(now), names])
            try await connection.execute(
                "UPDATE asset_blobs SET attached = 1, unreferenced_since = NULL WHERE (scope, checksum) IN (SELECT scope, checksum FROM asset_uploads WHERE "
                    + spent + ")", [names])
        }
    }

    package func assetBlob(scopeKey: String, checksum: String) async throws -> AssetBlob? {
        try await driver.read { connection in
            try await connection.first("SELECT size FROM asset_blobs WHERE scope = ? AND checksum = ?", [.text(scopeKey), .text(checksum)])
                .map { AssetBlob(scopeKey: scopeKey, checksum: checksum, size: $0.int(0)) }
        }
    }

    /// The sweep's advisory lock: one sweep at a time across the daemons of a database.
    static let assetSweepLock: Int64 = 7_270_004

    /// Removes expired upload URLs and unspent receipts, then decides each blob's fate
    /// (`AssetSweepRules`) and applies each decision to every blob it concerns in one statement.
    package func sweepAssets(releasedMilliseconds: Int64, bytes: any AssetByteStore) async throws -> Int {
        let now = clock()
        return try await driver.write { connection in
            if let lock = connection.dialect.exclusiveLock(Self.assetSweepLock) { try await connection.execute(lock) }
            try await connection.execute("DELETE FROM asset_uploads WHERE uploaded_at IS NULL AND created_at < ?",
                                         [.int(now - AssetLimits.uploadURLMilliseconds - 3_600_000)])
            try await connection.execute("DELETE FROM asset_uploads WHERE attached_at IS NULL AND uploaded_at < ?",
                                         [.int(now - AssetLimits.unattachedMilliseconds)])
            let referenced = Set(try await self.referencedAssets(connection).map(\.asset))
            var decided: [AssetSweepRules.Decision: [AssetBlob]] = [:]
            for row in try await connection.rows("SELECT scope, checksum, size, attached, created_at, unreferenced_since FROM asset_blobs") {
                let blob = AssetBlob(scopeKey: row.text(0), checksum: row.text(1), size: row.int(2))
                let decision = AssetSweepRules.decide(referenced: referenced.contains(StoredAsset(blob)), attached: row.int(3) != 0,
                                                      createdAt: row.int(4), unreferencedSince: row.optionalInt(5), now: now,
                                                      releasedMilliseconds: releasedMilliseconds)
                decided[decision, default: []].append(blob)
            }
            let blobsIn = connection.dialect.isPairInJSONArray("scope", "checksum")
            func pairs(_ decision: AssetSweepRules.Decision) -> SQLValue? {
                guard let blobs = decided[decision], !blobs.isEmpty else { return nil }
                return .text(JSONArgument.pairs(blobs.map { ($0.scopeKey, $0.checksum) }))
            }
            if let marked = pairs(.markReferenced) {
                try await connection.execute("UPDATE asset_blobs SET attached = 1, unreferenced_since = NULL WHERE " + blobsIn, [marked])
            }
            if let released = pairs(.markUnreferenced) {
                try await connection.execute("UPDATE asset_blobs SET unreferenced_since = ? WHERE " + blobsIn, [.int(now), released])
            }
            guard let removed = pairs(.remove), let blobs = decided[.remove] else { return 0 }
            try await connection.execute("DELETE FROM asset_blobs WHERE " + blobsIn, [removed])
            try await connection.execute("DELETE FROM asset_uploads WHERE " + blobsIn, [removed])
            try await bytes.remove(blobs, connection)
            return blobs.count
        }
    }

    /// Every asset a live record of a live zone refers to, with where (`zone/record.field`). The
    /// cast is for SQLite, which keeps the fields as bytes that `LIKE` never matches.
    func referencedAssets(_ connection: any StoreConnection) async throws -> [(asset: StoredAsset, place: String)] {
        var found: [(StoredAsset, String)] = []
        for row in try await connection.rows(
            """
            SELECT d.container, d.environment, d.user_id, COALESCE(u.record_name, ''), z.name, r.name, r.fields
            FROM records r JOIN zones z ON z.id = r.zone_id AND z.deleted = 0
            JOIN databases d ON d.id = z.database_id LEFT JOIN users u ON u.id = d.user_id
            WHERE r.deleted = 0 AND CAST(r.fields AS TEXT) LIKE '%"ASSETID%'
            """)
        {
            guard let environment = Environment(rawValue: row.text(1)) else { continue }
            let owner = row.int(2) == DatabaseScope.publicOwnerID ? DatabaseScope.publicOwnerRecordName : row.text(3)
            let scope = AssetScope(container: row.text(0), environment: environment, ownerRecordName: owner)
            for (field, checksum) in AssetFields.checksums(inFieldsJSON: row.blob(6)) {
                found.append((StoredAsset(scopeKey: scope.key, checksum: checksum), "\(row.text(4))/\(row.text(5)).\(field)"))
            }
        }
        return found
    }

    /// `scorebookd check`'s part for assets: every asset a live record refers to is kept, whole,
    /// with its checksum (each verified once, however many records refer to it).
    func assetProblems(_ connection: any StoreConnection, bytes: any AssetByteStore) async throws -> [String] {
        let references = try await referencedAssets(connection)
        let distinct = Array(Set(references.map(\.asset)))
        guard !distinct.isEmpty else { return [] }
        var sizes: [StoredAsset: Int64] = [:]
        for row in try await connection.rows("SELECT scope, checksum, size FROM asset_blobs WHERE " + connection.dialect.isPairInJSONArray("scope", "checksum"),
                                             [.text(JSONArgument.pairs(distinct.map { ($0.scopeKey, $0.checksum) }))]) {
            sizes[StoredAsset(scopeKey: row.text(0), checksum: row.text(1))] = row.int(2)
        }
        var whole: [StoredAsset: Bool] = [:]
        for asset in distinct {
            guard let size = sizes[asset] else { continue }
            whole[asset] = try await bytes.matches(AssetBlob(scopeKey: asset.scopeKey, checksum: asset.checksum, size: size), connection)
        }
        return references.filter { whole[$0.asset] != true }.prefix(20).map {
            "asset \($0.asset.checksum.prefix(12))… of \($0.place) is missing or does not match its checksum"
        }
    }

    static let uploadColumns = "upload_id, user_id, scope, binding, created_at, claimed_at, checksum, size, receipt, uploaded_at, attached_at"

    /// A row of `uploadColumns`.
    static func upload(_ row: StoreRow) -> AssetUpload {
        var upload = AssetUpload(id: row.text(0), userID: row.int(1), scopeKey: row.text(2), bindingKey: row.text(3), createdAt: row.int(4))
        upload.claimedAt = row.optionalInt(5)
        upload.checksum = row.optionalText(6)
        upload.size = row.optionalInt(7)
        upload.receipt = row.optionalText(8)
        upload.uploadedAt = row.optionalInt(9)
        upload.attachedAt = row.optionalInt(10)
        return upload
    }
}

/// One scope's bytes with one checksum: what a record's asset field names.
struct StoredAsset: Hashable {
    var scopeKey: String
    var checksum: String

    init(scopeKey: String, checksum: String) {
        self.scopeKey = scopeKey
        self.checksum = checksum
    }

    init(_ blob: AssetBlob) { self.init(scopeKey: blob.scopeKey, checksum: blob.checksum) }
}

/// What the sweep does with one stored asset.
package enum AssetSweepRules {
    package enum Decision: Hashable { case keep, markReferenced, markUnreferenced, remove }

    package static func decide(referenced: Bool, attached: Bool, createdAt: Int64, unreferencedSince: Int64?, now: Int64,
                               releasedMilliseconds: Int64) -> Decision
    {
        if referenced { return attached && unreferencedSince == nil ? .keep : .markReferenced }
        if !attached { return createdAt < now - AssetLimits.unattachedMilliseconds ? .remove : .keep }
        guard let since = unreferencedSince else { return .markUnreferenced }
        return since < now - releasedMilliseconds ? .remove : .keep
    }
}
