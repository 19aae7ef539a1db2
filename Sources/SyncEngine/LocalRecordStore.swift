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
///
/// Unchecked `Sendable`: the connection is a non-`Sendable` handle, used only while `lock` is held
/// (a recursive lock, so a transaction may open inside another); a `Mutex` is not re-entrant, and
/// the compiler cannot follow a lock it does not own.
public final class LocalRecordStore: @unchecked Sendable {
    public let path: String
    let connection: SQLiteConnection
    private let lock = NSRecursiveLock()
    /// Transactions open on this thread's call stack (under `lock`): a transaction begun inside
    /// another joins it, so the sync engine can check its session and apply an answer in one.
    private var transactionDepth = 0
    /// Checkpoints the log while fetched pages are written (none for an in-memory store).
    let checkpointer: WALCheckpointer?

    static let schemaVersion: Int64 = 3

    /// The book (zone) this store object reads and edits; other books of the file are left alone.
    public let book: LocalBook
    /// The book's row in `books`; every per-book row is keyed by it.
    public let bookID: Int64
    /// How a record edited both here and on the server is merged (`RecordMerge.merge` unless
    /// the app brought its own).
    public let fieldMerge: RecordMerge.Handler
    /// The book every account of the file has (`ScorebookData` for the CLI; an app names its
    /// own): sync and watch reach the private database through it, and it is made again on the
    /// server rather than dropped when another machine deletes it.
    public let homeBook: LocalBook

    /// Opens the store at `path`, creating the file and its folder if needed, on `book`
    /// (registered in the file if new).
    public init(path: String, book: LocalBook = .defaultBook, homeBook: LocalBook = .defaultBook,
                fieldMerge: @escaping RecordMerge.Handler = RecordMerge.merge) throws
    {
        self.path = path
        self.book = book
        self.homeBook = homeBook
        self.fieldMerge = fieldMerge
        if path != ":memory:" {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                throw LocalStoreError("cannot create the folder \(folder.path)")
            }
        }
        connection = try SQLiteConnection(path: path, synchronous: .full)
        checkpointer = path == ":memory:" ? nil : WALCheckpointer(path: path)
        try Self.migrate(connection, homeBook: homeBook)
        bookID = try Self.registerBook(book, in: connection)
        try connection.defineConstantFunction("current_book", value: bookID)
    }

    /// The same file opened on another book.
    public func opening(_ other: LocalBook) throws -> LocalRecordStore {
        try LocalRecordStore(path: path, book: other, homeBook: homeBook, fieldMerge: fieldMerge)
    }

    static func migrate(_ connection: SQLiteConnection, homeBook: LocalBook = .defaultBook) throws {
        let version = try connection.scalarInt("PRAGMA user_version") ?? 0
        guard version < Self.schemaVersion else { return }
        try connection.transaction {
            // Re-read inside the write lock: another process may have migrated meanwhile.
            let version = try connection.scalarInt("PRAGMA user_version") ?? 0
            if version < 1 {
                try connection.execute("""
                    CREATE TABLE IF NOT EXISTS records(
                        name TEXT PRIMARY KEY, type TEXT NOT NULL, fields BLOB NOT NULL, parent TEXT,
                        modified_ms INTEGER NOT NULL DEFAULT 0);
                    CREATE TABLE IF NOT EXISTS record_references(
                        name TEXT NOT NULL, field TEXT NOT NULL, target TEXT NOT NULL, action TEXT NOT NULL);
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
                    """)
            }
            if version < 2 { try migrateToBooks(connection, homeBook: homeBook) }
            if version < 3 { try migrateToWriters(connection) }
            try connection.execute("PRAGMA user_version = \(Self.schemaVersion)")
        }
    }

    /// Version 2: one file holds several books. Every per-record row gains the book it belongs
    /// to (a `books` row: database scope, zone name, owner) and is keyed by (book, name); what
    /// the file held is moved into book 1, the home book of the private database (`ScorebookData`,
    /// whose only files had version 1; an app's new file starts with its own zone), with the
    /// zone's sync state (token, refetch flag, last sync).
    static func migrateToBooks(_ connection: SQLiteConnection, homeBook: LocalBook = .defaultBook) throws {
        let perBookKeys = perBookSettingKeys.map { "'\($0)'" }.joined(separator: ", ")
        let homeZone = homeBook.zoneName.replacingOccurrences(of: "'", with: "''")
        try connection.execute("""
            CREATE TABLE books(
                id INTEGER PRIMARY KEY, scope TEXT NOT NULL, zone_name TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '',
                title TEXT, role TEXT NOT NULL DEFAULT 'owner', pending_delete INTEGER NOT NULL DEFAULT 0,
                UNIQUE(scope, zone_name, owner));
            INSERT INTO books(id, scope, zone_name, owner) VALUES(1, 'private', '\(homeZone)', '');

            ALTER TABLE records RENAME TO records_v1;
            CREATE TABLE records(
                book INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, fields BLOB NOT NULL, parent TEXT,
                modified_ms INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(book, name));
            INSERT INTO records(rowid, book, name, type, fields, parent, modified_ms)
                SELECT rowid, 1, name, type, fields, parent, modified_ms FROM records_v1;
            DROP TABLE records_v1;
            CREATE INDEX records_by_type ON records(book, type);

            ALTER TABLE record_references RENAME TO record_references_v1;
            CREATE TABLE record_references(
                book INTEGER NOT NULL, name TEXT NOT NULL, field TEXT NOT NULL, target TEXT NOT NULL, action TEXT NOT NULL);
            INSERT INTO record_references SELECT 1, name, field, target, action FROM record_references_v1;
            DROP TABLE record_references_v1;
            CREATE INDEX record_references_by_target ON record_references(book, target);
            CREATE INDEX record_references_by_name ON record_references(book, name);

            ALTER TABLE server_copies RENAME TO server_copies_v1;
            CREATE TABLE server_copies(
                book INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, change_tag TEXT, record BLOB NOT NULL,
                seen INTEGER NOT NULL DEFAULT 1, PRIMARY KEY(book, name));
            INSERT INTO server_copies SELECT 1, name, type, change_tag, record, seen FROM server_copies_v1;
            DROP TABLE server_copies_v1;

            ALTER TABLE outbox RENAME TO outbox_v1;
            CREATE TABLE outbox(
                book INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, operation TEXT NOT NULL,
                sequence INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, parked_reason TEXT, PRIMARY KEY(book, name));
            INSERT INTO outbox SELECT 1, name, type, operation, sequence, attempts, parked_reason FROM outbox_v1;
            DROP TABLE outbox_v1;

            ALTER TABLE waiting_records RENAME TO waiting_records_v1;
            CREATE TABLE waiting_records(
                book INTEGER NOT NULL, name TEXT NOT NULL, record BLOB NOT NULL, missing TEXT NOT NULL, PRIMARY KEY(book, name));
            INSERT INTO waiting_records SELECT 1, name, record, missing FROM waiting_records_v1;
            DROP TABLE waiting_records_v1;

            ALTER TABLE sent_states RENAME TO sent_states_v1;
            CREATE TABLE sent_states(book INTEGER NOT NULL, name TEXT NOT NULL, record BLOB NOT NULL, PRIMARY KEY(book, name));
            INSERT INTO sent_states SELECT 1, name, record FROM sent_states_v1;
            DROP TABLE sent_states_v1;

            ALTER TABLE settings RENAME TO settings_v1;
            CREATE TABLE settings(book INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY(book, key));
            INSERT INTO settings SELECT CASE WHEN key IN (\(perBookKeys)) THEN 1 ELSE 0 END, key, value FROM settings_v1;
            DROP TABLE settings_v1;
            """)
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
            try connection.map("SELECT name, type, fields, parent FROM records WHERE book = current_book() AND type = ? ORDER BY rowid", [.text(type)], Self.readRecord)
        }
    }

    /// Every local record of the book with an asset field (a picture).
    public func recordsWithAssets() throws -> [Record] {
        try withConnection { connection in
            try connection.map("SELECT name, type, fields, parent FROM records WHERE book = current_book() AND instr(fields, 'ASSETID') > 0 ORDER BY rowid",
                               [], Self.readRecord)
        }
    }

    /// Every local record holding a reference to `target`, optionally only of one type.
    public func records(referencing target: String, ofType type: String? = nil) throws -> [Record] {
        try withConnection { connection in
            try connection.map("""
                SELECT r.name, r.type, r.fields, r.parent FROM records r
                WHERE r.book = current_book() AND r.name IN (SELECT name FROM record_references WHERE book = current_book() AND target = ?) AND (? IS NULL OR r.type = ?)
                ORDER BY r.rowid
                """, [.text(target), type.sqlValue, type.sqlValue], Self.readRecord)
        }
    }

    /// The number of local records.
    public func recordCount() throws -> Int {
        try withConnection { Int(try $0.scalarInt("SELECT COUNT(*) FROM records WHERE book = current_book()") ?? 0) }
    }

    /// Whether the store holds any record or any change not yet sent.
    public func hasLocalData() throws -> Bool {
        try withConnection { connection in
            (try connection.scalarInt("SELECT EXISTS(SELECT 1 FROM records WHERE book = current_book()) OR EXISTS(SELECT 1 FROM outbox WHERE book = current_book())") ?? 0) != 0
        }
    }

    /// The number of changes waiting to be sent.
    public func pendingChangeCount() throws -> Int {
        try withConnection { Int(try $0.scalarInt("SELECT COUNT(*) FROM outbox WHERE book = current_book()") ?? 0) }
    }

    /// Takes the store's write lock for good (this connection's transaction never ends; the
    /// process is about to) and counts the changes pending in every book, as `status` does. For
    /// Ctrl-C on a sync: no commit of that sync can come after the number it prints.
    public func pendingChangesHoldingWritesUntilExit() throws -> Int {
        try withConnection { connection in
            try connection.execute("BEGIN IMMEDIATE")
            return Int(try connection.scalarInt("SELECT COUNT(*) FROM outbox WHERE book IN (SELECT id FROM books WHERE pending_delete = 0)") ?? 0)
        }
    }

    /// Removes every record, outbox entry, server copy and setting of every book: a store as new.
    public func deleteAllData() throws {
        try transaction { connection in
            try connection.execute("""
                DELETE FROM records; DELETE FROM record_references; DELETE FROM server_copies; DELETE FROM sent_states;
                DELETE FROM outbox; DELETE FROM waiting_records; DELETE FROM settings; DELETE FROM books WHERE id <> 1; DELETE FROM server_writers;
                """)
        }
    }

    // MARK: Row helpers shared by the extensions

    static func readRecord(_ row: SQLiteStatement) throws -> Record {
        let fields = try Record.fields(fromStoredJSON: row.blob(2))
        return Record(recordName: row.text(0), recordType: row.text(1), fields: fields, parent: row.optionalText(3))
    }

    static func record(named name: String, in connection: SQLiteConnection) throws -> Record? {
        try connection.first("SELECT name, type, fields, parent FROM records WHERE book = current_book() AND name = ?", [.text(name)], readRecord)
    }

    static func fieldsBlob(_ fields: [String: FieldValue]) -> [UInt8] {
        Record(recordName: "", recordType: "", fields: fields).fieldsJSONBytes()
    }

    /// Writes the local copy of a record and its references; `fieldsBlob` is its fields already
    /// serialized, and a record new to the book has no references to replace.
    static func writeRecord(_ record: Record, fieldsBlob fields: [UInt8]? = nil, replacingReferences: Bool = true,
                            in connection: SQLiteConnection) throws
    {
        try connection.run("""
            INSERT INTO records(book, name, type, fields, parent, modified_ms) VALUES(current_book(), ?, ?, ?, ?, ?)
            ON CONFLICT(book, name) DO UPDATE SET fields = excluded.fields, parent = excluded.parent, modified_ms = excluded.modified_ms
            """, [.text(record.recordName), .text(record.recordType), .blob(fields ?? fieldsBlob(record.fields)), record.parent.sqlValue,
                  .int(RecordMerge.modificationMilliseconds(of: record))])
        if replacingReferences {
            try connection.run("DELETE FROM record_references WHERE book = current_book() AND name = ?", [.text(record.recordName)])
        }
        for (field, reference) in record.references {
            try connection.run("INSERT INTO record_references(book, name, field, target, action) VALUES(current_book(), ?, ?, ?, ?)",
                               [.text(record.recordName), .text(field), .text(reference.recordName), .text(reference.action.rawValue)])
        }
    }

    static func exists(_ name: String, in connection: SQLiteConnection) throws -> Bool {
        (try connection.scalarInt("SELECT EXISTS(SELECT 1 FROM records WHERE book = current_book() AND name = ?)", [.text(name)]) ?? 0) != 0
    }

    /// `name` and every record that a `DELETE_SELF` reference chain ties to it, parents first:
    /// what deleting `name` deletes, locally as on the server.
    static func cascade(from name: String, in connection: SQLiteConnection) throws -> [String] {
        var ordered = [name]
        var seen: Set<String> = [name]
        var index = 0
        while index < ordered.count {
            let children = try connection.map(
                "SELECT DISTINCT name FROM record_references WHERE book = current_book() AND target = ? AND action = 'DELETE_SELF'",
                [.text(ordered[index])]) { $0.text(0) }
            for child in children where seen.insert(child).inserted { ordered.append(child) }
            index += 1
        }
        return ordered
    }

    /// Removes local records (and what hangs off them) without queueing anything to send.
    static func removeLocally(_ names: [String], in connection: SQLiteConnection) throws {
        for name in names {
            try connection.run("DELETE FROM records WHERE book = current_book() AND name = ?", [.text(name)])
            try connection.run("DELETE FROM record_references WHERE book = current_book() AND name = ?", [.text(name)])
            try connection.run("DELETE FROM waiting_records WHERE book = current_book() AND name = ?", [.text(name)])
            try connection.run("DELETE FROM sent_states WHERE book = current_book() AND name = ?", [.text(name)])
        }
    }
}
