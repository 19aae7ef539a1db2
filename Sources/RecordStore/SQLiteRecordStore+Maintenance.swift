import Foundation
import RecordModel
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

    /// Checks the file and the store's invariants; returns the problems found (empty when sound).
    package func checkIntegrity() throws -> [String] {
        try database.readSync { connection in
            try connection.readTransaction {
                var problems: [String] = []
                let integrity = try connection.map("PRAGMA integrity_check") { $0.text(0) }
                // A damaged file stops here: the invariant queries below would only fail on it.
                if integrity != ["ok"] { return integrity.prefix(20).map { "sqlite: \($0)" } }
                // No live record may hold a DELETE_SELF or VALIDATE reference to a missing record.
                try connection.query(
                    """
                    SELECT r.zone_id, r.source, r.target FROM refs r
                    LEFT JOIN records t ON t.zone_id = r.zone_id AND t.name = r.target AND t.deleted = 0
                    WHERE t.name IS NULL LIMIT 20
                    """
                ) { problems.append("zone \($0.int64(0)): '\($0.text(1))' references missing '\($0.text(2))'") }
                try connection.query(
                    """
                    SELECT r.zone_id, r.source FROM refs r
                    LEFT JOIN records s ON s.zone_id = r.zone_id AND s.name = r.source AND s.deleted = 0
                    WHERE s.name IS NULL LIMIT 20
                    """
                ) { problems.append("zone \($0.int64(0)): reference index holds deleted source '\($0.text(1))'") }
                // A zone's sequence is at least every change it has handed out.
                try connection.query(
                    "SELECT z.id, z.seq, MAX(r.seq) FROM zones z JOIN records r ON r.zone_id = z.id GROUP BY z.id HAVING MAX(r.seq) > z.seq"
                ) { problems.append("zone \($0.int64(0)): sequence \($0.int64(1)) is behind its records (\($0.int64(2)))") }
                try connection.query(
                    "SELECT COUNT(*) FROM records r LEFT JOIN zones z ON z.id = r.zone_id AND z.deleted = 0 WHERE z.id IS NULL"
                ) { if $0.int64(0) > 0 { problems.append("\($0.int64(0)) records belong to no live zone") } }
                try connection.query(IntegrityChecks.unindexedRecord) {
                    problems.append(IntegrityChecks.unindexedRecordProblem(zone: $0.int64(0), name: $0.text(1)))
                }
                try connection.query(IntegrityChecks.miscountedType, [.text(ShareRules.recordType)]) {
                    problems.append(IntegrityChecks.miscountedTypeProblem(zone: $0.int64(0), type: $0.text(1), live: $0.int64(2), counted: $0.int64(3)))
                }
                try connection.query(IntegrityChecks.miscountedField) {
                    problems.append(IntegrityChecks.miscountedFieldProblem(zone: $0.int64(0), type: $0.text(1), field: $0.text(2),
                                                                           entries: $0.int64(3), counted: $0.int64(4)))
                }
                problems += try assetProblems(connection)
                return problems
            }
        }
    }
}
