import Foundation
import NIOCore
import PostgresNIO
import RecordModel
import RecordStore

/// Assets on PostgreSQL: the bookkeeping as on SQLite, the bytes in `asset_chunks` rows of
/// `AssetLimits.chunkBytes`, so any daemon serves any asset and a backup of the database holds them.
/// An upload is staged in a local file while it arrives and hashed; only whole, verified bytes
/// reach the database, one chunk at a time.
extension PostgresBackend {
    /// This process's staging directory (removed when the store closes).
    static let stagingDirectoryPath = (NSTemporaryDirectory() as NSString).appendingPathComponent("scorebookd-uploads-\(getpid())")

    package func assetStagingDirectory() throws -> String {
        try FileManager.default.createDirectory(atPath: PostgresBackend.stagingDirectoryPath, withIntermediateDirectories: true)
        return PostgresBackend.stagingDirectoryPath
    }

    /// The assets' bytes are chunk rows.
    package var assetBytes: any AssetByteStore { PostgresAssetChunks() }

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
        guard var buffer else { throw AssetLimits.missingBytes() }
        let skip = Int(offset - Int64(sequence) * chunkBytes)
        guard skip < buffer.readableBytes else { throw AssetLimits.missingBytes() }
        buffer.moveReaderIndex(forwardBy: skip)
        return buffer.readSlice(length: min(buffer.readableBytes, maximumLength)) ?? ByteBuffer()
    }

    /// `migrate`: the bytes of an asset whose bookkeeping was imported, from the SQLite store's file.
    package func importAssetFile(scopeKey: String, checksum: String, path: String) async throws {
        try await driver.write { connection in
            try await connection.execute("DELETE FROM asset_chunks WHERE scope = ? AND checksum = ?", [.text(scopeKey), .text(checksum)])
            try await PostgresAssetChunks.insert(scopeKey: scopeKey, checksum: checksum, fromFile: path, connection)
        }
    }
}

/// The assets' bytes as `asset_chunks` rows of `AssetLimits.chunkBytes`, in the transaction that
/// records them: one chunk in memory at a time.
struct PostgresAssetChunks: AssetByteStore {
    func keep(_ blob: AssetBlob, stagedFile path: String, recorded: Bool, _ connection: any StoreConnection) async throws {
        // Bytes recorded before are kept already (a concurrent upload waited for them).
        guard recorded else { return }
        try await Self.insert(scopeKey: blob.scopeKey, checksum: blob.checksum, fromFile: path, connection)
    }

    func remove(_ blobs: [AssetBlob], _ connection: any StoreConnection) async throws {
        guard !blobs.isEmpty else { return }
        try await connection.execute("DELETE FROM asset_chunks WHERE " + connection.dialect.isPairInJSONArray("scope", "checksum"),
                                     [.text(JSONArgument.pairs(blobs.map { ($0.scopeKey, $0.checksum) }))])
    }

    /// Reads the chunks in order, one at a time (bounded by the size the row records).
    func matches(_ blob: AssetBlob, _ connection: any StoreConnection) async throws -> Bool {
        var digest = AssetDigest()
        let chunkCount = blob.size / Int64(AssetLimits.chunkBytes) + 1
        for sequence in 0..<chunkCount {
            guard let row = try await connection.first("SELECT data FROM asset_chunks WHERE scope = ? AND checksum = ? AND seq = ?",
                                                       [.text(blob.scopeKey), .text(blob.checksum), .int(sequence)]) else { break }
            row.blob(0).withUnsafeBytes { digest.update($0) }
        }
        return digest.size == blob.size && digest.finish() == blob.checksum
    }

    /// Writes the file's bytes as chunk rows, one chunk in memory at a time.
    static func insert(scopeKey: String, checksum: String, fromFile path: String, _ connection: any StoreConnection) async throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ServerError(.internalError, "\(path) is missing") }
        defer { try? handle.close() }
        var sequence: Int64 = 0
        while let data = try handle.read(upToCount: AssetLimits.chunkBytes), !data.isEmpty {
            try await connection.execute("INSERT INTO asset_chunks (scope, checksum, seq, data) VALUES (?, ?, ?, ?)",
                                         [.text(scopeKey), .text(checksum), .int(sequence), .blob(Array(data))])
            sequence += 1
        }
    }
}
