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
        // The assets' files beside it (they never change, so linking them is a consistent copy).
        _ = try backupAssets(to: SQLiteRecordStore.backupAssetDirectory(forBackup: path))
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
                // The query index holds live records only, and its counts match what it and the records hold.
                try connection.query(
                    """
                    SELECT q.zone_id, q.record_name FROM query_index q LEFT JOIN records r
                        ON r.zone_id = q.zone_id AND r.name = q.record_name AND r.type = q.record_type AND r.deleted = 0
                    WHERE r.name IS NULL LIMIT 20
                    """
                ) { problems.append("zone \($0.int64(0)): query index holds '\($0.text(1))', which is not live") }
                try connection.query(
                    """
                    SELECT r.zone_id, r.type, COUNT(*), COALESCE(c.entries, 0) FROM records r LEFT JOIN query_counts c
                        ON c.zone_id = r.zone_id AND c.record_type = r.type AND c.field = ''
                    WHERE r.deleted = 0 GROUP BY r.zone_id, r.type HAVING COUNT(*) != COALESCE(c.entries, 0) LIMIT 20
                    """
                ) { problems.append("zone \($0.int64(0)): \($0.int64(2)) live '\($0.text(1))' records, query counts say \($0.int64(3))") }
                try connection.query(
                    """
                    SELECT q.zone_id, q.record_type, q.field, COUNT(*), COALESCE(c.entries, 0) FROM query_index q LEFT JOIN query_counts c
                        ON c.zone_id = q.zone_id AND c.record_type = q.record_type AND c.field = q.field
                    GROUP BY q.zone_id, q.record_type, q.field HAVING COUNT(*) != COALESCE(c.entries, 0) LIMIT 20
                    """
                ) {
                    problems.append("zone \($0.int64(0)): \($0.int64(3)) query index entries for '\($0.text(1)).\($0.text(2))', counts say \($0.int64(4))")
                }
                problems += try assetProblems(connection)
                return problems
            }
        }
    }
}
