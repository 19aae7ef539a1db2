import Foundation
import RecordModel
import RecordStore
import SQLiteDB

extension SQLiteRecordStore {
    /// Where `backup --to FILE` puts the assets: `FILE.assets/`, laid out as a data directory's `assets/`.
    package static func backupAssetDirectory(forBackup path: String) -> String { path + ".assets" }

    /// Writes a consistent copy of the store to `path` while it keeps serving: `VACUUM INTO` reads
    /// one snapshot, so concurrent commits neither block it nor restart it.
    package func backup(to path: String) throws {
        guard !FileManager.default.fileExists(atPath: path) else { throw StoreOpenError("\(path) already exists") }
        _ = try database.readSync { connection in
            try connection.run("VACUUM INTO ?", [.text(path)])
        }
        try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        // The assets' files beside it (they never change, so linking them is a consistent copy).
        _ = try backupAssets(to: SQLiteRecordStore.backupAssetDirectory(forBackup: path))
    }

    /// Whether the store holds nothing a restore would overwrite: no user, API token or database.
    package func isEmpty() throws -> Bool {
        try database.readSync { connection in
            try connection.scalarInt(
                "SELECT (SELECT COUNT(*) FROM users) + (SELECT COUNT(*) FROM api_tokens) + (SELECT COUNT(*) FROM databases)") == 0
        }
    }

    /// Restores the backup at `path` (`backup --to`, with its assets beside it) into `directory`,
    /// which must hold no store or an empty one. The copy goes through SQLite's backup API, so a
    /// file that is not a whole SQLite database is refused before anything is written; opening
    /// the result migrates a backup made by an older version.
    package static func restore(backup path: String, into directory: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
            FileManager.default.isReadableFile(atPath: path)
        else { throw StoreOpenError("cannot read backup \(path)") }
        let source: SQLiteConnection
        do {
            source = try SQLiteConnection(path: path, readOnly: true)
            guard try source.first("SELECT value FROM meta WHERE key = 'store_id'", [], { $0.text(0) }) != nil else {
                throw StoreOpenError("no store id")
            }
        } catch {
            throw StoreOpenError("\(path) is not a scorebookd backup")
        }
        let file = (directory as NSString).appendingPathComponent(databaseFileName)
        let assets = (directory as NSString).appendingPathComponent("assets")
        if FileManager.default.fileExists(atPath: file) {
            guard try SQLiteRecordStore(directory: directory).isEmpty() else {
                throw StoreOpenError("\(directory) already holds a store with data; restore into an empty data directory")
            }
            for leftover in [file, file + "-wal", file + "-shm", assets] { try? FileManager.default.removeItem(atPath: leftover) }
        } else if !FileManager.default.fileExists(atPath: directory) {
            try createDataDirectory(directory)
        }
        try source.backup(to: file)
        let backedUpAssets = backupAssetDirectory(forBackup: path)
        if FileManager.default.fileExists(atPath: backedUpAssets) { try FileManager.default.copyItem(atPath: backedUpAssets, toPath: assets) }
        _ = try SQLiteRecordStore(directory: directory)
    }

    /// Makes a data directory (and its parents) readable by its owner only: it holds every user's data.
    static func createDataDirectory(_ directory: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw StoreOpenError("cannot create data directory \(directory): \((error as NSError).localizedDescription)")
        }
    }
}
