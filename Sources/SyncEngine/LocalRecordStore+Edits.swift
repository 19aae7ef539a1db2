import RecordModel
import SQLiteDB

/// Local edits inside one transaction of a `LocalRecordStore`; each one queues its change in
/// the outbox in the same transaction.
public struct LocalEditor {
    let connection: SQLiteConnection

    /// Saves a record made or changed on this machine. Its fields are laid over the stored
    /// ones, so fields this version does not know survive; `removedFieldNames` are removed.
    public func save(_ record: Record) throws {
        let existing = try LocalRecordStore.record(named: record.recordName, in: connection)
        if let existing, existing.recordType != record.recordType {
            throw LocalStoreError("\(record.recordName) is a \(existing.recordType), not a \(record.recordType)")
        }
        var merged = existing ?? Record(recordName: record.recordName, recordType: record.recordType)
        for (name, value) in record.fields { merged.fields[name] = value }
        for name in record.removedFieldNames { merged.fields[name] = nil }
        if record.parent != nil { merged.parent = record.parent }
        guard merged != existing else { return }
        try LocalRecordStore.writeRecord(merged, in: connection)
        try LocalRecordStore.queue(record.recordName, type: record.recordType, operation: .save, in: connection)
    }

    /// Deletes a record and, as the server will, every record tied to it by `DELETE_SELF`
    /// references. Returns the deleted records, the named one first.
    @discardableResult
    public func delete(recordNamed name: String) throws -> [Record] {
        let names = try LocalRecordStore.cascade(from: name, in: connection)
        var deleted: [Record] = []
        for member in names {
            if let record = try LocalRecordStore.record(named: member, in: connection) { deleted.append(record) }
        }
        guard !deleted.isEmpty else { return [] }
        try LocalRecordStore.removeLocally(names, in: connection)
        for member in names {
            let mayBeOnServer = try LocalRecordStore.mayBeOnServer(member, in: connection)
            if member == name && mayBeOnServer {
                // The server deletes the rest of the cascade itself.
                try LocalRecordStore.queue(member, type: deleted[0].recordType, operation: .delete, in: connection)
            } else {
                try connection.run("DELETE FROM outbox WHERE book = current_book() AND name = ?", [.text(member)])
                if member != name { try connection.run("DELETE FROM server_copies WHERE book = current_book() AND name = ?", [.text(member)]) }
            }
        }
        return deleted
    }

    /// The local copy of a record, as this transaction sees it.
    public func record(named name: String) throws -> Record? {
        try LocalRecordStore.record(named: name, in: connection)
    }
}

/// A local edit that the store refuses.
public struct LocalStoreError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension LocalRecordStore {
    /// Runs several local edits in one transaction: all are kept, or none.
    /// A read-only shared book refuses every edit here, before anything is queued.
    public func edit<T>(_ body: (LocalEditor) throws -> T) throws -> T {
        try transaction { connection in
            if try connection.first("SELECT role FROM books WHERE id = current_book()", [], { $0.text(0) }) == "read-only" {
                throw LocalStoreError("the book \(book.zoneName) is shared with you read-only; it cannot be changed")
            }
            return try body(LocalEditor(connection: connection))
        }
    }

    /// Whether the server may hold the record: it has a server copy, or a save of it was sent
    /// and its answer never recorded.
    static func mayBeOnServer(_ name: String, in connection: SQLiteConnection) throws -> Bool {
        let hasCopy = (try connection.scalarInt("SELECT EXISTS(SELECT 1 FROM server_copies WHERE book = current_book() AND name = ?)", [.text(name)]) ?? 0) != 0
        let attempts = try connection.scalarInt("SELECT attempts FROM outbox WHERE book = current_book() AND name = ?", [.text(name)]) ?? 0
        return hasCopy || attempts > 0
    }

    /// Queues a record in the outbox with a new sequence number, replacing its earlier entry.
    static func queue(_ name: String, type: String, operation: PendingChange.Operation, in connection: SQLiteConnection) throws {
        let sequence = (try connection.scalarInt("SELECT CAST(value AS INTEGER) FROM settings WHERE book = 0 AND key = 'outboxSequence'") ?? 0) + 1
        try connection.run("INSERT INTO settings(book, key, value) VALUES(0, 'outboxSequence', ?) ON CONFLICT(book, key) DO UPDATE SET value = excluded.value",
                           [.text(String(sequence))])
        try connection.run("""
            INSERT INTO outbox(book, name, type, operation, sequence) VALUES(current_book(), ?, ?, ?, ?)
            ON CONFLICT(book, name) DO UPDATE SET operation = excluded.operation, sequence = excluded.sequence, parked_reason = NULL
            """, [.text(name), .text(type), .text(operation.rawValue), .int(sequence)])
    }
}
