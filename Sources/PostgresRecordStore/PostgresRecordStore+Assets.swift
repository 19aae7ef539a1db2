import Foundation
import NIOCore
import PostgresNIO
import RecordModel
import RecordStore

/// Assets on PostgreSQL: the bookkeeping as on SQLite, the bytes in `asset_chunks` rows of
/// `AssetLimits.chunkBytes`, so any daemon serves any asset and a backup of the database holds them.
/// An upload is staged in a local file while it arrives and hashed; only whole, verified bytes
/// reach the database, one chunk at a time.
extension PostgresRecordStore {
    /// This process's staging directory (removed when the store closes).
    static let stagingDirectoryPath = (NSTemporaryDirectory() as NSString).appendingPathComponent("scorebookd-uploads-\(getpid())")

    package func assetStagingDirectory() throws -> String {
        try FileManager.default.createDirectory(atPath: PostgresRecordStore.stagingDirectoryPath, withIntermediateDirectories: true)
        return PostgresRecordStore.stagingDirectoryPath
    }

    package func assetSigningSecret() async throws -> [UInt8] {
        let fresh = RandomToken.hex(bytes: 32)
        let hex = try await write { connection in
            try await connection.query("INSERT INTO meta (key, value) VALUES ('asset_secret', \(fresh)) ON CONFLICT (key) DO NOTHING",
                                       logger: self.logger)
            return try await connection.query("SELECT value FROM meta WHERE key = 'asset_secret'", logger: self.logger)
                .collect().first?.decode(String.self) ?? fresh
        }
        return Array(hex.utf8)
    }

    package func createAssetUploads(_ uploads: [AssetUpload]) async throws {
        try await write { connection in
            for upload in uploads {
                try await connection.query(
                    """
                    INSERT INTO asset_uploads (upload_id, user_id, scope, binding, created_at)
                    VALUES (\(upload.id), \(upload.userID), \(upload.scopeKey), \(upload.bindingKey), \(upload.createdAt))
                    """, logger: self.logger)
            }
        }
    }

    package func claimAssetUpload(id: String, createdAfter: Int64) async throws -> AssetUpload? {
        let now = clock()
        return try await write { connection in
            let rows = try await connection.query(
                """
                UPDATE asset_uploads SET claimed_at = \(now) WHERE upload_id = \(id) AND claimed_at IS NULL AND created_at > \(createdAfter)
                RETURNING \(unescaped: PostgresRecordStore.uploadColumns)
                """, logger: self.logger
            ).collect()
            return try rows.first.map(PostgresRecordStore.upload)
        }
    }

    package func completeAssetUpload(id: String, blob: AssetBlob, stagedFile path: String, receipt: String) async throws {
        let now = clock()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await write { connection in
            // A concurrent upload of the same bytes waits on this row and then finds them stored.
            let inserted = try await connection.query(
                """
                INSERT INTO asset_blobs (scope, checksum, size, created_at) VALUES (\(blob.scopeKey), \(blob.checksum), \(blob.size), \(now))
                ON CONFLICT (scope, checksum) DO UPDATE SET created_at = excluded.created_at, unreferenced_since = NULL
                RETURNING (xmax = 0)
                """, logger: self.logger
            ).collect().first?.decode(Bool.self) ?? false
            if inserted { try await self.insertChunks(scopeKey: blob.scopeKey, checksum: blob.checksum, fromFile: path, connection) }
            try await connection.query(
                """
                UPDATE asset_uploads SET checksum = \(blob.checksum), size = \(blob.size), receipt = \(receipt), uploaded_at = \(now)
                WHERE upload_id = \(id)
                """, logger: self.logger)
        }
    }

    package func assetUploads(receipts: [String]) async throws -> [AssetUpload] {
        guard !receipts.isEmpty else { return [] }
        return try await read { connection in
            try await connection.query(
                "SELECT \(unescaped: PostgresRecordStore.uploadColumns) FROM asset_uploads WHERE receipt = ANY(\(receipts))", logger: self.logger
            ).collect().map(PostgresRecordStore.upload)
        }
    }

    package func hasUploadedAsset(userID: Int64, scopeKey: String, checksum: String) async throws -> Bool {
        try await read { connection in
            try await !connection.query(
                """
                SELECT 1 FROM asset_uploads u JOIN asset_blobs b ON b.scope = u.scope AND b.checksum = u.checksum
                WHERE u.scope = \(scopeKey) AND u.checksum = \(checksum) AND u.user_id = \(userID) LIMIT 1
                """, logger: self.logger
            ).collect().isEmpty
        }
    }

    package func markAssetsAttached(receipts: [String]) async throws {
        guard !receipts.isEmpty else { return }
        let now = clock()
        try await write { connection in
            try await connection.query(
                "UPDATE asset_uploads SET attached_at = \(now) WHERE receipt = ANY(\(receipts)) AND attached_at IS NULL", logger: self.logger)
            try await connection.query(
                """
                UPDATE asset_blobs SET attached = 1, unreferenced_since = NULL
                WHERE (scope, checksum) IN (SELECT scope, checksum FROM asset_uploads WHERE receipt = ANY(\(receipts)))
                """, logger: self.logger)
        }
    }

    package func assetBlob(scopeKey: String, checksum: String) async throws -> AssetBlob? {
        try await read { connection in
            try await connection.query("SELECT size FROM asset_blobs WHERE scope = \(scopeKey) AND checksum = \(checksum)", logger: self.logger)
                .collect().first.map { AssetBlob(scopeKey: scopeKey, checksum: checksum, size: try $0.decode(Int64.self)) }
        }
    }

    /// A stored chunk at a time: a smaller piece would read the same row again for each part.
    package var assetPieceBytes: Int { AssetLimits.chunkBytes }

    /// One chunk row (or the rest of it) per call: at most one chunk of the asset is in memory.
    package func readAssetBlob(_ blob: AssetBlob, offset: Int64, maximumLength: Int) async throws -> ByteBuffer {
        let chunkBytes = Int64(AssetLimits.chunkBytes)
        guard offset < blob.size, maximumLength > 0 else { return ByteBuffer() }
        let sequence = Int32(offset / chunkBytes)
        let (scope, checksum) = (blob.scopeKey, blob.checksum)
        let buffer: ByteBuffer? = try await read { connection in
            try await connection.query(
                "SELECT data FROM asset_chunks WHERE scope = \(scope) AND checksum = \(checksum) AND seq = \(sequence)", logger: self.logger
            ).collect().first?.decode(ByteBuffer.self)
        }
        guard var buffer else { throw ServerError(.internalError, "the asset's chunk \(sequence) is missing") }
        let skip = Int(offset - Int64(sequence) * chunkBytes)
        guard skip < buffer.readableBytes else { throw ServerError(.internalError, "the asset's chunk \(sequence) is short") }
        buffer.moveReaderIndex(forwardBy: skip)
        return buffer.readSlice(length: min(buffer.readableBytes, maximumLength)) ?? ByteBuffer()
    }

    /// `migrate`: the bytes of an asset whose bookkeeping was imported, from the SQLite store's file.
    package func importAssetFile(scopeKey: String, checksum: String, path: String) async throws {
        try await write { connection in
            try await connection.query("DELETE FROM asset_chunks WHERE scope = \(scopeKey) AND checksum = \(checksum)", logger: self.logger)
            try await self.insertChunks(scopeKey: scopeKey, checksum: checksum, fromFile: path, connection)
        }
    }

    /// Writes the file's bytes as chunk rows, one chunk in memory at a time.
    func insertChunks(scopeKey: String, checksum: String, fromFile path: String, _ connection: PostgresConnection) async throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ServerError(.internalError, "\(path) is missing") }
        defer { try? handle.close() }
        var sequence: Int32 = 0
        while let data = try handle.read(upToCount: AssetLimits.chunkBytes), !data.isEmpty {
            let bytes = ByteBuffer(bytes: data)
            try await connection.query(
                "INSERT INTO asset_chunks (scope, checksum, seq, data) VALUES (\(scopeKey), \(checksum), \(sequence), \(bytes))",
                logger: logger)
            sequence += 1
        }
    }

    /// Every (scope key, hex checksum) a live record of a live zone refers to.
    func referencedAssets(_ connection: PostgresConnection) async throws -> [(scopeKey: String, checksum: String, place: String)] {
        let rows = try await connection.query(
            """
            SELECT d.container, d.environment, d.user_id, COALESCE(u.record_name, ''), z.name, r.name, r.fields
            FROM records r JOIN zones z ON z.id = r.zone_id AND z.deleted = 0
            JOIN databases d ON d.id = z.database_id LEFT JOIN users u ON u.id = d.user_id
            WHERE r.deleted = 0 AND position('"ASSETID' in r.fields) > 0
            """, logger: logger)
        var found: [(String, String, String)] = []
        for try await (container, environmentName, userID, ownerName, zoneName, recordName, fields)
            in rows.decode((String, String, Int64, String, String, String, String).self)
        {
            guard let environment = Environment(rawValue: environmentName) else { continue }
            let owner = userID == DatabaseScope.publicOwnerID ? DatabaseScope.publicOwnerRecordName : ownerName
            let scope = AssetScope(container: container, environment: environment, ownerRecordName: owner)
            for (field, checksum) in AssetFields.checksums(inFieldsJSON: Array(fields.utf8)) {
                found.append((scope.key, checksum, "\(zoneName)/\(recordName).\(field)"))
            }
        }
        return found
    }

    package func sweepAssets(releasedMilliseconds: Int64) async throws -> Int {
        let now = clock()
        return try await write { connection in
            // One sweep at a time across the daemons.
            try await connection.query("SELECT pg_advisory_xact_lock(7270004)", logger: self.logger)
            try await connection.query(
                "DELETE FROM asset_uploads WHERE uploaded_at IS NULL AND created_at < \(now - AssetLimits.uploadURLMilliseconds - 3_600_000)",
                logger: self.logger)
            try await connection.query(
                "DELETE FROM asset_uploads WHERE attached_at IS NULL AND uploaded_at < \(now - AssetLimits.unattachedMilliseconds)",
                logger: self.logger)
            let referenced = Set(try await self.referencedAssets(connection).map { $0.scopeKey + "\u{1F}" + $0.checksum })
            let rows = try await connection.query(
                "SELECT scope, checksum, attached, created_at, unreferenced_since FROM asset_blobs", logger: self.logger
            ).collect()
            var removed = 0
            for row in rows {
                let (scope, checksum, attached, createdAt, unreferencedSince) = try row.decode((String, String, Int32, Int64, Int64?).self)
                switch AssetSweepRules.decide(referenced: referenced.contains(scope + "\u{1F}" + checksum), attached: attached != 0,
                                              createdAt: createdAt, unreferencedSince: unreferencedSince, now: now,
                                              releasedMilliseconds: releasedMilliseconds) {
                case .keep: break
                case .markReferenced:
                    try await connection.query(
                        "UPDATE asset_blobs SET attached = 1, unreferenced_since = NULL WHERE scope = \(scope) AND checksum = \(checksum)",
                        logger: self.logger)
                case .markUnreferenced:
                    try await connection.query(
                        "UPDATE asset_blobs SET unreferenced_since = \(now) WHERE scope = \(scope) AND checksum = \(checksum)", logger: self.logger)
                case .remove:
                    try await connection.query("DELETE FROM asset_chunks WHERE scope = \(scope) AND checksum = \(checksum)", logger: self.logger)
                    try await connection.query("DELETE FROM asset_blobs WHERE scope = \(scope) AND checksum = \(checksum)", logger: self.logger)
                    try await connection.query("DELETE FROM asset_uploads WHERE scope = \(scope) AND checksum = \(checksum)", logger: self.logger)
                    removed += 1
                }
            }
            return removed
        }
    }

    /// The check's part for assets: every referenced asset is stored, whole, with its checksum.
    func assetProblems(_ connection: PostgresConnection) async throws -> [String] {
        var problems: [String] = []
        var verified: [String: Bool] = [:]
        for reference in try await referencedAssets(connection) {
            let key = reference.scopeKey + "\u{1F}" + reference.checksum
            if verified[key] == nil {
                var digest = AssetDigest()
                let size = try await connection.query(
                    "SELECT size FROM asset_blobs WHERE scope = \(reference.scopeKey) AND checksum = \(reference.checksum)", logger: logger
                ).collect().first?.decode(Int64.self)
                let chunks = try await connection.query(
                    "SELECT data FROM asset_chunks WHERE scope = \(reference.scopeKey) AND checksum = \(reference.checksum) ORDER BY seq",
                    logger: logger)
                for try await data in chunks.decode(ByteBuffer.self) {
                    data.withUnsafeReadableBytes { digest.update($0) }
                }
                verified[key] = size != nil && digest.size == size && digest.finish() == reference.checksum
            }
            if verified[key] == false, problems.count < 20 {
                problems.append("asset \(reference.checksum.prefix(12))… of \(reference.place) is missing or does not match its checksum")
            }
        }
        return problems
    }

    static let uploadColumns = "upload_id, user_id, scope, binding, created_at, claimed_at, checksum, size, receipt, uploaded_at, attached_at"

    static func upload(_ row: PostgresRow) throws -> AssetUpload {
        let (id, userID, scope, binding, createdAt, claimedAt, checksum, size, receipt, uploadedAt, attachedAt) = try row.decode(
            (String, Int64, String, String, Int64, Int64?, String?, Int64?, String?, Int64?, Int64?).self)
        var upload = AssetUpload(id: id, userID: userID, scopeKey: scope, bindingKey: binding, createdAt: createdAt)
        upload.claimedAt = claimedAt
        upload.checksum = checksum
        upload.size = size
        upload.receipt = receipt
        upload.uploadedAt = uploadedAt
        upload.attachedAt = attachedAt
        return upload
    }
}
