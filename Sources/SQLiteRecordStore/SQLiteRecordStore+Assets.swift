import Foundation
import RecordModel
import RecordStore
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

    /// The files as the engine's byte store.
    var assetFiles: SQLiteAssetFiles { SQLiteAssetFiles(store: self) }

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
}

/// The assets' bytes as files: kept by moving the staged file into place, under the writer's
/// transaction (the sweep, which removes files under it too, cannot remove one between the
/// check and the move).
struct SQLiteAssetFiles: AssetByteStore {
    let store: SQLiteRecordStore

    func keep(_ blob: AssetBlob, stagedFile path: String, recorded: Bool, _ connection: any StoreConnection) async throws {
        let destination = store.assetFilePath(scopeKey: blob.scopeKey, checksum: blob.checksum)
        // The file, not the row, tells: a file left by an upload whose transaction failed is reused.
        guard !FileManager.default.fileExists(atPath: destination) else { return }
        try FileManager.default.createDirectory(atPath: (destination as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: path, toPath: destination)
    }

    func remove(_ blobs: [AssetBlob], _ connection: any StoreConnection) async throws {
        for blob in blobs { try? FileManager.default.removeItem(atPath: store.assetFilePath(scopeKey: blob.scopeKey, checksum: blob.checksum)) }
    }

    func matches(_ blob: AssetBlob, _ connection: any StoreConnection) async throws -> Bool {
        SQLiteRecordStore.fileMatches(path: store.assetFilePath(scopeKey: blob.scopeKey, checksum: blob.checksum), checksum: blob.checksum,
                                      size: blob.size)
    }
}
