import Foundation
import RecordModel
import SQLiteDB

/// One machine's durable copy of a zone, in one SQLite file: the records as this machine sees
/// them, the outbox of changes not yet acknowledged by the server, the last server copy of each
/// record (the ancestor for merging; it also keeps fields this version does not know), records
/// fetched before the records they require, the change token, and settings.
///
/// A local edit and its outbox entry are written in one transaction (`edit(_:)`), so a change
/// is never lost, whenever the process stops. Several processes may open the same file.
///
/// ```swift
/// let store = try LocalRecordStore(path: "/tmp/book.sqlite")
/// try store.edit { editor in try editor.save(record) }
/// let games = try store.records(ofType: "Game")
/// ```
public final class LocalRecordStore: @unchecked Sendable {
    public let path: String
    let connection: SQLiteConnection
    private let lock = NSRecursiveLock()
    /// Transactions open on this thread's call stack (under `lock`): a transaction begun inside
    /// another joins it, so the sync engine can check its session and apply an answer in one.
    private var transactionDepth = 0

    static let schemaVersion: Int64 = 1

    /// Opens the store at `path`, creating the file and its folder if needed.
    public init(path: String) throws {
        self.path = path
        if path != ":memory:" {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                throw LocalStoreError("cannot create the folder \(folder.path)")
            }
        }
        connection = try SQLiteConnection(path: path, synchronous: .full)
        try migrate()
    }

    private func migrate() throws {
        let version = try connection.scalarInt("PRAGMA user_version") ?? 0
        guard version < Self.schemaVersion else { return }
        try connection.transaction {
            try connection.execute("""
                CREATE TABLE IF NOT EXISTS records(
                    name TEXT PRIMARY KEY, type TEXT NOT NULL, fields BLOB NOT NULL, parent TEXT,
                    modified_ms INTEGER NOT NULL DEFAULT 0);
                CREATE INDEX IF NOT EXISTS records_by_type ON records(type);
                CREATE TABLE IF NOT EXISTS record_references(
                    name TEXT NOT NULL, field TEXT NOT NULL, target TEXT NOT NULL, action TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS record_references_by_target ON record_references(target);
                CREATE INDEX IF NOT EXISTS record_references_by_name ON record_references(name);
                CREATE TABLE IF NOT EXISTS server_copies(
                    name TEXT PRIMARY KEY, type TEXT NOT NULL, change_tag TEXT, record BLOB NOT NULL,
                    seen INTEGER NOT NULL DEFAULT 1);
                CREATE TABLE IF NOT EXISTS outbox(
                    name TEXT PRIMARY KEY, type TEXT NOT NULL, operation TEXT NOT NULL, sequence INTEGER NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0, parked_reason TEXT);
                CREATE TABLE IF NOT EXISTS waiting_records(
                    name TEXT PRIMARY KEY, record BLOB NOT NULL, missing TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS settings(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS sent_states(name TEXT PRIMARY KEY, record BLOB NOT NULL);
                PRAGMA user_version = \(Self.schemaVersion);
                """)
        }
    }

    /// Runs `body` holding the connection; every public entry point goes through here.
    func withConnection<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(connection)
    }

    /// Runs `body` in one write transaction; inside another transaction, as part of it.
    func transaction<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try withConnection { connection in
            if transactionDepth > 0 { return try body(connection) }
            transactionDepth += 1
            defer { transactionDepth -= 1 }
            return try connection.transaction { try body(connection) }
        }
    }

    /// SQLite's `PRAGMA data_version` on this store's connection: it changes when another
    /// connection (another process) commits, and never for this one's own writes.
    public func dataVersion() throws -> Int64 {
        try withConnection { try $0.scalarInt("PRAGMA data_version") ?? 0 }
    }

    // MARK: Reading records

    /// The local copy of a record, or nil.
    public func record(named name: String) throws -> Record? {
        try withConnection { try Self.record(named: name, in: $0) }
    }

    /// Every local record of a type, oldest first.
    public func records(ofType type: String) throws -> [Record] {
        try withConnection { connection in
            try connection.map("SELECT name, type, fields, parent FROM records WHERE type = ? ORDER BY rowid", [.text(type)], Self.readRecord)
        }
    }

    /// Every local record holding a reference to `target`, optionally only of one type.
    public func records(referencing target: String, ofType type: String? = nil) throws -> [Record] {
        try withConnection { connection in
            try connection.map("""
                SELECT r.name, r.type, r.fields, r.parent FROM records r
                WHERE r.name IN (SELECT name FROM record_references WHERE target = ?) AND (? IS NULL OR r.type = ?)
                ORDER BY r.rowid
                """, [.text(target), type.sqlValue, type.sqlValue], Self.readRecord)
        }
    }

    /// The number of local records.
    public func recordCount() throws -> Int {
        try withConnection { Int(try $0.scalarInt("SELECT COUNT(*) FROM records") ?? 0) }
    }

    /// Whether the store holds any record or any change not yet sent.
    public func hasLocalData() throws -> Bool {
        try withConnection { connection in
            (try connection.scalarInt("SELECT EXISTS(SELECT 1 FROM records) OR EXISTS(SELECT 1 FROM outbox)") ?? 0) != 0
        }
    }

    /// The number of changes waiting to be sent.
    public func pendingChangeCount() throws -> Int {
        try withConnection { Int(try $0.scalarInt("SELECT COUNT(*) FROM outbox") ?? 0) }
    }

    /// Removes every record, outbox entry, server copy and setting: a store as new.
    public func deleteAllData() throws {
        try transaction { connection in
            try connection.execute("""
                DELETE FROM records; DELETE FROM record_references; DELETE FROM server_copies; DELETE FROM sent_states;
                DELETE FROM outbox; DELETE FROM waiting_records; DELETE FROM settings;
                """)
        }
    }

    // MARK: Row helpers shared by the extensions

    static func readRecord(_ row: SQLiteStatement) throws -> Record {
        let fields = try Record.fields(fromStoredJSON: row.blob(2))
        return Record(recordName: row.text(0), recordType: row.text(1), fields: fields, parent: row.optionalText(3))
    }

    static func record(named name: String, in connection: SQLiteConnection) throws -> Record? {
        try connection.first("SELECT name, type, fields, parent FROM records WHERE name = ?", [.text(name)], readRecord)
    }

    static func fieldsBlob(_ fields: [String: FieldValue]) -> [UInt8] {
        JSONValue.object(fields.mapValues(\.json)).serialized()
    }

    /// Writes the local copy of a record and its references.
    static func writeRecord(_ record: Record, in connection: SQLiteConnection) throws {
        try connection.run("""
            INSERT INTO records(name, type, fields, parent, modified_ms) VALUES(?, ?, ?, ?, ?)
            ON CONFLICT(name) DO UPDATE SET fields = excluded.fields, parent = excluded.parent, modified_ms = excluded.modified_ms
            """, [.text(record.recordName), .text(record.recordType), .blob(fieldsBlob(record.fields)), record.parent.sqlValue,
                  .int(RecordMerge.modificationMilliseconds(of: record))])
        try connection.run("DELETE FROM record_references WHERE name = ?", [.text(record.recordName)])
        for (field, reference) in record.references {
            try connection.run("INSERT INTO record_references(name, field, target, action) VALUES(?, ?, ?, ?)",
                               [.text(record.recordName), .text(field), .text(reference.recordName), .text(reference.action.rawValue)])
        }
    }

    static func exists(_ name: String, in connection: SQLiteConnection) throws -> Bool {
        (try connection.scalarInt("SELECT EXISTS(SELECT 1 FROM records WHERE name = ?)", [.text(name)]) ?? 0) != 0
    }

    /// `name` and every record that a `DELETE_SELF` reference chain ties to it, parents first:
    /// what deleting `name` deletes, locally as on the server (CONTRACT §3.2).
    static func cascade(from name: String, in connection: SQLiteConnection) throws -> [String] {
        var ordered = [name]
        var seen: Set<String> = [name]
        var index = 0
        while index < ordered.count {
            let children = try connection.map(
                "SELECT DISTINCT name FROM record_references WHERE target = ? AND action = 'DELETE_SELF'",
                [.text(ordered[index])]) { $0.text(0) }
            for child in children where seen.insert(child).inserted { ordered.append(child) }
            index += 1
        }
        return ordered
    }

    /// Removes local records (and what hangs off them) without queueing anything to send.
    static func removeLocally(_ names: [String], in connection: SQLiteConnection) throws {
        for name in names {
            try connection.run("DELETE FROM records WHERE name = ?", [.text(name)])
            try connection.run("DELETE FROM record_references WHERE name = ?", [.text(name)])
            try connection.run("DELETE FROM waiting_records WHERE name = ?", [.text(name)])
            try connection.run("DELETE FROM sent_states WHERE name = ?", [.text(name)])
        }
    }
}
