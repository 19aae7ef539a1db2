import RecordClient
import RecordModel
import SQLiteDB

/// What makes applying a page of the change feed cheap when most of its records are new here,
/// as on a new machine's first sync of a big book.
extension LocalRecordStore {
    /// Runs `body` (the commit of one fetched page) without waiting for the disk at commit: a
    /// page and the token it reached still commit together, and a killed process loses nothing
    /// (the write-ahead log is in the file), but a power cut may take back the last pages, which
    /// the next sync fetches again from the token then stored. Local edits keep full durability.
    /// The log is copied into the database by `WALCheckpointer` meanwhile, not by this commit.
    func withRefetchableDurability<T>(_ body: () throws -> T) throws -> T {
        let result = try withConnection { connection in
            try connection.execute("PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=\(checkpointer == nil ? 1000 : 0)")
            defer { try? connection.execute("PRAGMA synchronous=FULL; PRAGMA wal_autocheckpoint=1000") }
            return try body()
        }
        checkpointer?.request()
        return result
    }

    /// The names among `names` this book knows in any way: a local record, a server copy, an
    /// outbox entry or a waiting record. A fetched record none of these knows is taken as it is.
    static func knownNames(among names: [String], in connection: SQLiteConnection) throws -> Set<String> {
        guard !names.isEmpty else { return [] }
        let list = JSONValue.array(names.map(JSONValue.string)).serialized()
        return Set(try connection.map("""
            SELECT name FROM records WHERE book = current_book() AND name IN (SELECT value FROM json_each(?1))
            UNION SELECT name FROM server_copies WHERE book = current_book() AND name IN (SELECT value FROM json_each(?1))
            UNION SELECT name FROM outbox WHERE book = current_book() AND name IN (SELECT value FROM json_each(?1))
            UNION SELECT name FROM waiting_records WHERE book = current_book() AND name IN (SELECT value FROM json_each(?1))
            """, [.text(String(decoding: list, as: UTF8.self))]) { $0.text(0) })
    }

    /// Stores a fetched record this book did not know: the local copy, its references and the
    /// server copy. `serverJSON`, the record's dictionary as fetched, is stored as the server
    /// copy as it is, and its `fields` as the local fields; without it both are serialized once
    /// from `record`. The writers are remembered by the caller, once for a page.
    static func insertNewServerRecord(_ record: Record, serverJSON: [UInt8]?, in connection: SQLiteConnection) throws {
        if let serverJSON, let fields = fieldsMember(of: serverJSON) {
            try writeRecord(record, fieldsBlob: fields, replacingReferences: false, in: connection)
            try storeServerCopy(record, bytes: serverJSON, in: connection)
            return
        }
        let fields = fieldsBlob(record.fields)
        try writeRecord(record, fieldsBlob: fields, replacingReferences: false, in: connection)
        try storeServerCopy(record, bytes: serverCopyBytes(record, fieldsBlob: fields), in: connection)
    }

    /// The bytes of the `fields` member of a record dictionary, or nil.
    static func fieldsMember(of json: [UInt8]) -> [UInt8]? {
        json.withUnsafeBufferPointer { buffer in
            let start = buffer.firstIndex(of: UInt8(ascii: "{")) ?? 0
            return JSONSlices(buffer).member("fields", ofObjectAt: start).map { Array(buffer[$0]) }
        }
    }

    /// The record dictionary `Record(responseJSON:)` reads back (`Record.json()`'s members, its
    /// removed field names left out) around already-serialized fields, written byte by byte:
    /// building it as a `JSONValue` first was most of the time a fetched page took to apply.
    static func serverCopyBytes(_ record: Record, fieldsBlob fields: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(fields.count + 256)
        out.appendLiteral(#"{"recordName":"#)
        JSONValue.appendString(record.recordName, to: &out)
        out.appendLiteral(#","recordType":"#)
        JSONValue.appendString(record.recordType, to: &out)
        out.appendLiteral(#","fields":"#)
        out.append(contentsOf: fields)
        if let tag = record.recordChangeTag {
            out.appendLiteral(#","recordChangeTag":"#)
            JSONValue.appendString(tag, to: &out)
        }
        if let created = record.created {
            out.appendLiteral(#","created":"#)
            created.json.serialize(into: &out)
        }
        if let modified = record.modified {
            out.appendLiteral(#","modified":"#)
            modified.json.serialize(into: &out)
        }
        if let zoneID = record.zoneID {
            out.appendLiteral(#","zoneID":{"zoneName":"#)
            JSONValue.appendString(zoneID.zoneName, to: &out)
            if let owner = zoneID.ownerRecordName {
                out.appendLiteral(#","ownerRecordName":"#)
                JSONValue.appendString(owner, to: &out)
            }
            out.appendLiteral("}")
        }
        if let parent = record.parent {
            out.appendLiteral(#","parent":{"recordName":"#)
            JSONValue.appendString(parent, to: &out)
            out.appendLiteral("}")
        }
        out.appendLiteral("}")
        return out
    }
}
