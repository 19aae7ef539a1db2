import Foundation
import RecordModel
import RecordStore
import SQLiteDB
import Synchronization

/// The SQLite implementation of `RecordStorage`: one database file in WAL mode, every write
/// through one connection (so change sequences follow commit order), reads from pooled readers.
package final class SQLiteRecordStore: Sendable {
    package static let databaseFileName = "scorebook.sqlite"

    let database: SQLiteDatabase
    package let storeID: String
    let productionSchema: Schema
    let clock: @Sendable () -> Int64
    let subscriptionCache = SubscriptionCache()
    let tokenUses = TokenUseRecorder()

    /// How long a write waits for a lock held by another process (a `scorebookd user` command, a
    /// backup) before the request is answered `TRY_AGAIN_LATER`.
    package func setBusyTimeout(milliseconds: Int32) { database.setWriterBusyTimeout(milliseconds: milliseconds) }

    /// Opens (creating if needed) the store in `directory`.
    package init(directory: String, schema: Schema = BuiltinSchema.scorebook,
                clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) throws
    {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            try SQLiteRecordStore.createDataDirectory(directory)
        } else if !isDirectory.boolValue {
            throw StoreOpenError("data directory \(directory) is not a directory")
        }
        guard FileManager.default.isWritableFile(atPath: directory) else {
            throw StoreOpenError("data directory \(directory) is not writable")
        }
        let path = (directory as NSString).appendingPathComponent(SQLiteRecordStore.databaseFileName)
        self.database = try SQLiteDatabase(path: path, synchronous: .full)
        // Owner only (SQLite gives the WAL and shared-memory files the database's mode when it makes them).
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
        self.productionSchema = schema
        self.clock = clock
        self.storeID = try database.writeSync { connection in
            try connection.transaction {
                try SQLiteRecordStore.migrate(connection)
                if let existing = try connection.first("SELECT value FROM meta WHERE key = 'store_id'", [], { $0.text(0) }) {
                    return existing
                }
                let id = RandomToken.hex(bytes: 8)
                try connection.run("INSERT INTO meta (key, value) VALUES ('store_id', ?)", [.text(id)])
                return id
            }
        }
    }

    package func close() { database.checkpoint() }

    /// Brings the schema to `StoreMigration.latestVersion`, in the caller's transaction: a store
    /// without tables is version 0, one without a recorded version (made before migrations) is 1.
    static func migrate(_ connection: SQLiteConnection) throws {
        var version = 0
        if try connection.scalarInt("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'") != nil {
            let recorded = try connection.first("SELECT value FROM meta WHERE key = 'schema_version'", [], { $0.text(0) })
            version = recorded.flatMap { Int($0) } ?? 1
        }
        let steps = try StoreMigration.pending(from: version)
        for step in steps {
            for statement in step.sqlite { try connection.execute(statement) }
            if step.backfillsQueryIndex { try backfillQueryIndex(connection) }
        }
        if !steps.isEmpty {
            try connection.run("INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                               [.text(String(StoreMigration.latestVersion))])
        }
    }

    /// Migration 2: the index entries and counts of every live record already stored.
    static func backfillQueryIndex(_ connection: SQLiteConnection) throws {
        var backfill = QueryIndexBackfill()
        while true {
            let rows = try connection.map(QueryIndexBackfill.statement, backfill.after.map(\.sqlite)) {
                (zone: $0.int64(0), name: $0.text(1), type: $0.text(2), fields: $0.blob(3))
            }
            let chunk = backfill.entries(of: rows)
            for entry in chunk.entries {
                try connection.run("INSERT INTO query_index (zone_id, record_type, field, sort_key, record_name) VALUES (?, ?, ?, ?, ?)", entry.map(\.sqlite))
            }
            guard chunk.more else { break }
        }
        for row in backfill.countRows {
            try connection.run("INSERT INTO query_counts (zone_id, record_type, field, entries) VALUES (?, ?, ?, ?)", row.map(\.sqlite))
        }
    }

    /// The data file, for backups and integrity checks.
    package var path: String { database.path }
}
