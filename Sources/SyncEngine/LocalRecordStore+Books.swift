import RecordModel
import SQLiteDB

/// One book a local store holds: a zone of the private or shared database.
public struct LocalBook: Hashable, Sendable, CustomStringConvertible {
    public enum Scope: String, Sendable { case `private`, shared }

    public var scope: Scope
    public var zoneName: String
    /// The zone owner's user record name; empty for the logged-in user's own (private) zones.
    public var ownerRecordName: String

    public init(scope: Scope = .private, zoneName: String, ownerRecordName: String = "") {
        self.scope = scope
        self.zoneName = zoneName
        self.ownerRecordName = ownerRecordName
    }

    /// `ScorebookData` of the private database: the book every store had before books.
    public static let defaultBook = LocalBook(zoneName: "ScorebookData")

    /// The zone as the server names it (the owner only for a shared zone).
    public var zoneID: ZoneID {
        ZoneID(zoneName: zoneName, ownerRecordName: ownerRecordName.isEmpty ? nil : ownerRecordName)
    }

    public var description: String { zoneName }
}

/// A book as `book list` shows it.
public struct LocalBookSummary: Sendable {
    public var book: LocalBook
    public var title: String?
    public var role: String
    public var recordCount: Int
    public var lastSync: String?
    public var pendingDelete: Bool
}

extension LocalRecordStore {
    /// The id of `book` in the file, adding it if new.
    static func registerBook(_ book: LocalBook, in connection: SQLiteConnection) throws -> Int64 {
        let select = "SELECT id FROM books WHERE scope = ? AND zone_name = ? AND owner = ?"
        let key: [SQLValue] = [.text(book.scope.rawValue), .text(book.zoneName), .text(book.ownerRecordName)]
        if let id = try connection.scalarInt(select, key) { return id }
        return try connection.transaction {
            if let id = try connection.scalarInt(select, key) { return id }
            try connection.run("INSERT INTO books(scope, zone_name, owner, role) VALUES(?, ?, ?, ?)",
                               key + [.text(book.scope == .private ? "owner" : "read-write")])
            return try connection.scalarInt(select, key) ?? 0
        }
    }

    /// Whether the file knows `book` (without adding it).
    public func hasBook(_ book: LocalBook) throws -> Bool {
        try withConnection { connection in
            try connection.scalarInt("SELECT id FROM books WHERE scope = ? AND zone_name = ? AND owner = ?",
                                     [.text(book.scope.rawValue), .text(book.zoneName), .text(book.ownerRecordName)]) != nil
        }
    }

    /// Every book the file holds, the default first, then by name; books waiting to be deleted
    /// on the server are included (flagged).
    public func books() throws -> [LocalBookSummary] {
        try withConnection { connection in
            try connection.map("""
                SELECT b.scope, b.zone_name, b.owner, b.title, b.role, b.pending_delete,
                       (SELECT COUNT(*) FROM records r WHERE r.book = b.id),
                       (SELECT value FROM settings s WHERE s.book = b.id AND s.key = ?)
                FROM books b ORDER BY b.id <> 1, b.zone_name, b.owner
                """, [.text(SyncSettingKey.lastSync)]) { row in
                LocalBookSummary(
                    book: LocalBook(scope: LocalBook.Scope(rawValue: row.text(0)) ?? .private, zoneName: row.text(1),
                                    ownerRecordName: row.text(2)),
                    title: row.optionalText(3), role: row.text(4), recordCount: Int(row.int64(6)),
                    lastSync: row.optionalText(7), pendingDelete: row.int64(5) != 0)
            }
        }
    }

    /// Records a shared book's title and the role the user has in it.
    public func setBookDetails(title: String?, role: String) throws {
        try transaction { connection in
            _ = try connection.run("UPDATE books SET title = ?, role = ? WHERE id = current_book()", [title.sqlValue, .text(role)])
            // Zones of the shared database are never created by a participant: ready as accepted.
            if book.scope == .shared { try Self.setSetting(SyncSettingKey.zoneReady, "1", in: connection) }
        }
    }

    /// This book's summary.
    public func bookSummary() throws -> LocalBookSummary? {
        try books().first { $0.book == book }
    }

    /// Whether this store's book is to be deleted on the server at the next sync.
    public func isPendingDelete() throws -> Bool {
        try withConnection { try $0.scalarInt("SELECT pending_delete FROM books WHERE id = current_book()") ?? 0 } != 0
    }

    /// Removes this book's records, outbox and sync state here, and marks it to be deleted on
    /// the server at the next sync (the row stays until then). The default book cannot go.
    public func deleteBookLocally() throws {
        try transaction { connection in
            try Self.removeBookRows(in: connection)
            try connection.run("UPDATE books SET pending_delete = 1 WHERE id = current_book()")
        }
    }

    /// Forgets the book entirely: after the server deleted it.
    public func forgetBook() throws {
        try transaction { connection in
            try Self.removeBookRows(in: connection)
            try connection.run("DELETE FROM books WHERE id = current_book() AND id <> 1")
        }
    }

    static func removeBookRows(in connection: SQLiteConnection) throws {
        try connection.execute("""
            DELETE FROM records WHERE book = current_book(); DELETE FROM record_references WHERE book = current_book();
            DELETE FROM server_copies WHERE book = current_book(); DELETE FROM sent_states WHERE book = current_book();
            DELETE FROM outbox WHERE book = current_book(); DELETE FROM waiting_records WHERE book = current_book();
            DELETE FROM settings WHERE book = current_book(); DELETE FROM server_writers WHERE book = current_book();
            """)
    }
}
