import RecordModel
import SQLiteDB

/// Who wrote a book's records, kept as the server copies arrive: reading it back from every
/// server copy after a sync took a scan of the whole book (0.4 s for 100,000 records).
extension LocalRecordStore {
    /// Version 3: `server_writers` holds the users each book's server copies name as creator or
    /// last modifier, filled here from the copies the file already holds.
    static func migrateToWriters(_ connection: SQLiteConnection) throws {
        try connection.execute("""
            CREATE TABLE IF NOT EXISTS server_writers(book INTEGER NOT NULL, user TEXT NOT NULL, PRIMARY KEY(book, user)) WITHOUT ROWID;
            INSERT OR IGNORE INTO server_writers(book, user)
                SELECT book, json_extract(record, '$.modified.userRecordName') FROM server_copies WHERE json_extract(record, '$.modified.userRecordName') IS NOT NULL
                UNION SELECT book, json_extract(record, '$.created.userRecordName') FROM server_copies WHERE json_extract(record, '$.created.userRecordName') IS NOT NULL;
            """)
    }

    /// The users who wrote this book's records as the server said (created and modified), in
    /// the server copies this machine received; a writer stays listed after the records they
    /// wrote are deleted.
    public func writerUserRecordNames() throws -> Set<String> {
        try withConnection { connection in
            Set(try connection.map("SELECT user FROM server_writers WHERE book = current_book()") { $0.text(0) })
        }
    }

    /// The creators and last modifiers `records` name.
    static func writers(of records: some Sequence<Record>) -> Set<String> {
        var users: Set<String> = []
        for record in records { collectWriters(of: record, into: &users) }
        return users
    }

    static func collectWriters(of record: Record, into users: inout Set<String>) {
        if let user = record.created?.userRecordName { users.insert(user) }
        if let user = record.modified?.userRecordName { users.insert(user) }
    }

    /// Remembers `users` as writers of this book.
    static func rememberWriters(_ users: Set<String>, in connection: SQLiteConnection) throws {
        for user in users {
            try connection.run("INSERT OR IGNORE INTO server_writers(book, user) VALUES(current_book(), ?)", [.text(user)])
        }
    }
}
