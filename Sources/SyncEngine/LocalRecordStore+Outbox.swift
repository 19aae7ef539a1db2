import RecordClient
import RecordModel
import SQLiteDB

/// The sending side: what the outbox holds and what the server's answers do to it.
extension LocalRecordStore {
    /// Outbox entries to send, with their dependencies; parked entries are left out.
    func sendableChanges() throws -> [PendingChange] {
        try withConnection { connection in
            let entries = try connection.map(
                "SELECT name, type, operation, sequence FROM outbox WHERE book = current_book() AND parked_reason IS NULL ORDER BY sequence") { row in
                PendingChange(recordName: row.text(0), recordType: row.text(1),
                              operation: PendingChange.Operation(rawValue: row.text(2)) ?? .save, sequence: row.int64(3))
            }
            return try entries.map { entry in
                guard entry.operation == .save, let record = try Self.record(named: entry.recordName, in: connection) else { return entry }
                var withDependencies = entry
                withDependencies.dependencies = record.saveDependencies
                return withDependencies
            }
        }
    }

    /// The books of the file with edits waiting to be sent (any book, not only this one).
    public func booksWithSendableChanges() throws -> [LocalBook] {
        try withConnection { connection in
            try connection.map(
                "SELECT DISTINCT b.scope, b.zone_name, b.owner FROM outbox o JOIN books b ON b.id = o.book WHERE o.parked_reason IS NULL ORDER BY b.id") { row in
                LocalBook(scope: LocalBook.Scope(rawValue: row.text(0)) ?? .private, zoneName: row.text(1), ownerRecordName: row.text(2))
            }
        }
    }

    /// Records queued for saving that the server has never acknowledged.
    func unsentRecordNames() throws -> Set<String> {
        try withConnection { connection in
            Set(try connection.map("""
                SELECT name FROM outbox WHERE book = current_book() AND operation = 'save' AND name NOT IN (SELECT name FROM server_copies WHERE book = current_book())
                """) { $0.text(0) })
        }
    }

    /// The last server copy of a record (with its change tag), or nil.
    public func serverCopy(named name: String) throws -> Record? {
        try withConnection { try Self.serverCopy(named: name, in: $0) }
    }

    static func serverCopy(named name: String, in connection: SQLiteConnection) throws -> Record? {
        try connection.first("SELECT record FROM server_copies WHERE book = current_book() AND name = ?", [.text(name)]) { row in
            try Record(responseJSON: try JSONValue.parse(row.blob(0)))
        }
    }

    /// `fieldsBlob`: the record's fields already serialized.
    static func writeServerCopy(_ record: Record, fieldsBlob fields: [UInt8]? = nil, in connection: SQLiteConnection) throws {
        try storeServerCopy(record, bytes: serverCopyBytes(record, fieldsBlob: fields ?? fieldsBlob(record.fields)), in: connection)
        try rememberWriters(writers(of: CollectionOfOne(record)), in: connection)
    }

    /// Stores `bytes` as the server copy of `record`.
    static func storeServerCopy(_ record: Record, bytes: [UInt8], in connection: SQLiteConnection) throws {
        try connection.run("""
            INSERT INTO server_copies(book, name, type, change_tag, record, seen) VALUES(current_book(), ?, ?, ?, ?, 1)
            ON CONFLICT(book, name) DO UPDATE SET change_tag = excluded.change_tag, record = excluded.record, seen = 1
            """, [.text(record.recordName), .text(record.recordType), record.recordChangeTag.sqlValue, .blob(bytes)])
    }

    /// Counts a send attempt before the request goes out, so a later local deletion knows the
    /// record may have reached the server even if the answer is never recorded; and remembers
    /// the state the server will hold if a save applies (its sent state), the merge ancestor
    /// should the answer be lost: the server then holding our own write is not a remote change.
    ///
    /// Returns the entries still queued as built: a local deletion committed by another process
    /// after the batch was built (while the record looked never sent) dropped its entry, and
    /// sending its `create` anyway would bring the record back.
    func markAttempted(_ sending: [(change: PendingChange, operation: RecordOperation)]) throws
        -> [(change: PendingChange, operation: RecordOperation)]
    {
        try transaction { connection in
            var stillQueued: [(change: PendingChange, operation: RecordOperation)] = []
            for (change, operation) in sending {
                let queued = try connection.first("SELECT operation FROM outbox WHERE book = current_book() AND name = ?", [.text(change.recordName)]) {
                    $0.text(0)
                }
                guard queued == change.operation.rawValue else { continue }
                stillQueued.append((change, operation))
                try connection.run("UPDATE outbox SET attempts = attempts + 1 WHERE book = current_book() AND name = ?", [.text(change.recordName)])
                guard change.operation == .save else { continue }
                var state = try Self.serverCopy(named: change.recordName, in: connection)
                    ?? Record(recordName: change.recordName, recordType: change.recordType)
                for name in operation.record.removedFieldNames { state.fields[name] = nil }
                for (name, value) in operation.record.fields { state.fields[name] = value }
                state.removedFieldNames = []
                try connection.run("INSERT OR REPLACE INTO sent_states(book, name, record) VALUES(current_book(), ?, ?)",
                                   [.text(change.recordName), .blob(state.json().serialized())])
            }
            return stillQueued
        }
    }

    /// The merge ancestor after a send whose answer was lost, field by field: where the server
    /// holds what we sent, our write applied and the sent value is the ancestor (so editing back
    /// wins); elsewhere the last known server value is (so an edit whose request never arrived,
    /// or was refused, is still ours to send).
    static func ancestorAfterLostAnswer(known: [String: FieldValue]?, sent: [String: FieldValue],
                                        server: [String: FieldValue]) -> [String: FieldValue]
    {
        var ancestor: [String: FieldValue] = [:]
        for name in Set(sent.keys).union(server.keys).union(known?.keys ?? [:].keys) {
            ancestor[name] = server[name] == sent[name] ? sent[name] : known?[name]
        }
        return ancestor
    }

    static func sentState(named name: String, in connection: SQLiteConnection) throws -> Record? {
        try connection.first("SELECT record FROM sent_states WHERE book = current_book() AND name = ?", [.text(name)]) { row in
            try Record(responseJSON: try JSONValue.parse(row.blob(0)))
        }
    }

    static func forgetSentState(_ name: String, in connection: SQLiteConnection) throws {
        try connection.run("DELETE FROM sent_states WHERE book = current_book() AND name = ?", [.text(name)])
    }

    /// True when some entry was sent before without an answer: the server may hold it already,
    /// and may since have deleted it.
    public func hasUnacknowledgedSends() throws -> Bool {
        try withConnection { try $0.scalarInt("SELECT 1 FROM outbox WHERE book = current_book() AND attempts > 0 LIMIT 1") != nil }
    }

    /// Removes an entry if it is still the one that was sent (no edit since).
    static func dequeue(_ change: PendingChange, in connection: SQLiteConnection) throws {
        try connection.run("DELETE FROM outbox WHERE book = current_book() AND name = ? AND sequence = ?", [.text(change.recordName), .int(change.sequence)])
    }

    /// An entry with nothing to send (the record is gone, or equals its server copy).
    func dropIfUnchanged(_ change: PendingChange) throws {
        try transaction { try Self.dequeue(change, in: $0) }
    }

    /// The server saved `sent` and answered `saved`: that is the new server copy.
    func acknowledgeSave(_ change: PendingChange, sent: Record, saved: Record) throws {
        try transaction { connection in
            var fields = try Self.serverCopy(named: change.recordName, in: connection)?.fields ?? [:]
            for name in sent.removedFieldNames { fields[name] = nil }
            for (name, value) in sent.fields { fields[name] = value }
            for (name, value) in saved.fields { fields[name] = value }
            var copy = saved
            copy.fields = fields
            if copy.recordType.isEmpty { copy.recordType = change.recordType }
            try Self.writeServerCopy(copy, in: connection)
            try Self.forgetSentState(change.recordName, in: connection)
            try Self.dequeue(change, in: connection)
        }
    }

    /// The server deleted the record (or never had it).
    func acknowledgeDelete(_ change: PendingChange) throws {
        try transaction { connection in
            try connection.run("DELETE FROM server_copies WHERE book = current_book() AND name = ?", [.text(change.recordName)])
            try Self.forgetSentState(change.recordName, in: connection)
            try Self.dequeue(change, in: connection)
        }
    }

    /// Sets an entry aside until the record is edited again.
    func park(_ change: PendingChange, reason: String) throws {
        try transaction { connection in
            _ = try connection.run("UPDATE outbox SET parked_reason = ? WHERE book = current_book() AND name = ? AND sequence = ?",
                               [.text(reason), .text(change.recordName), .int(change.sequence)])
        }
    }

    /// The reasons of parked entries, by record name.
    public func parkedChanges() throws -> [String: String] {
        try withConnection { connection in
            Dictionary(try connection.map("SELECT name, parked_reason FROM outbox WHERE book = current_book() AND parked_reason IS NOT NULL") {
                ($0.text(0), $0.text(1))
            }, uniquingKeysWith: { first, _ in first })
        }
    }

    /// What merging a server copy into the local one did.
    struct MergeOutcome {
        var applied: AppliedChange?
        var conflicts: [ConflictDetail] = []
        var hadConflict: Bool { !conflicts.isEmpty }
        /// The server already held what an earlier, interrupted send of this record carried: the
        /// outbox entry is settled as if that send had been answered.
        var settledEarlierSend = false
    }

    /// Merges a newer server copy into the local record (three-way, with the previous server
    /// copy as ancestor) and records it as the new server copy. The outbox keeps the record
    /// only if the merge holds local changes the server lacks.
    func mergeServerRecord(_ server: Record) throws -> MergeOutcome {
        try transaction { try Self.mergeServerRecord(server, merge: fieldMerge, in: $0) }
    }

    static func mergeServerRecord(_ server: Record, merge: RecordMerge.Handler, in connection: SQLiteConnection) throws -> MergeOutcome {
        let name = server.recordName
        let ancestor = try serverCopy(named: name, in: connection)
        let entry = try connection.first("SELECT operation FROM outbox WHERE book = current_book() AND name = ?", [.text(name)]) { $0.text(0) }
        let local = try record(named: name, in: connection)
        if local == nil, entry != nil {
            // Deleted here and not yet sent: the deletion stands; remember the copy for its tag.
            try writeServerCopy(server, in: connection)
            return MergeOutcome(applied: nil)
        }
        guard let local, entry != nil else {
            // Nothing local to keep: take the server copy.
            let fields = fieldsBlob(server.fields)
            try writeRecord(server, fieldsBlob: fields, in: connection)
            try writeServerCopy(server, fieldsBlob: fields, in: connection)
            return MergeOutcome(applied: AppliedChange(kind: .saved, record: server))
        }
        // The ancestor is what the server held as far as this machine knows: its last copy, or,
        // after a send whose answer was lost, the state that send produces (so our own write
        // coming back is not taken for a remote change). Without either (an unacknowledged create
        // whose send never started), every difference is a conflict.
        let sent = try sentState(named: name, in: connection)
        try forgetSentState(name, in: connection)
        let base = sent.map { Self.ancestorAfterLostAnswer(known: ancestor?.fields, sent: $0.fields, server: server.fields) }
            ?? ancestor?.fields
        let result = merge(base, local, server)
        var merged = local
        merged.fields = result.fields
        if merged.parent == nil { merged.parent = server.parent }
        try writeRecord(merged, in: connection)
        try writeServerCopy(server, in: connection)
        if !result.needsUpload { try connection.run("DELETE FROM outbox WHERE book = current_book() AND name = ?", [.text(name)]) }
        let applied = result.changedLocally ? AppliedChange(kind: .saved, record: merged) : nil
        let conflicts = ConflictDetail.details(of: result, local: local, server: server, merged: merged)
        return MergeOutcome(applied: applied, conflicts: conflicts,
                            settledEarlierSend: sent != nil && !result.needsUpload && conflicts.isEmpty && applied == nil)
    }

    /// What a remote deletion removed here: every local record of its cascade, and the local
    /// edits among them that will never reach the server.
    struct RemoteDeletion {
        var applied: [AppliedChange] = []
        var dropped: [DroppedChange] = []

        static func += (left: inout RemoteDeletion, right: RemoteDeletion) {
            left.applied += right.applied
            left.dropped += right.dropped
        }
    }

    /// The record, or a record it required, was deleted on another machine: delete it here
    /// with its cascade, sending nothing. `reason` is why a pending edit of `name` itself is
    /// dropped; pending edits of the rest of the cascade are dropped because their parent went.
    func applyRemoteDeletion(of name: String, reason: DroppedChange.Reason) throws -> RemoteDeletion {
        try transaction { try Self.applyRemoteDeletion(of: name, reason: reason, in: $0) }
    }

    /// `deletedBy`: who deleted `name` on the server, when its tombstone said; the cascade here
    /// is theirs too.
    static func applyRemoteDeletion(of name: String, reason: DroppedChange.Reason = .deleted, deletedBy: String? = nil,
                                    in connection: SQLiteConnection) throws -> RemoteDeletion
    {
        let names = try cascade(from: name, in: connection)
        var deletion = RemoteDeletion()
        for member in names {
            if let record = try record(named: member, in: connection) {
                deletion.applied.append(AppliedChange(kind: .deleted, record: record, deletedBy: deletedBy))
            }
            if let type = try connection.first("SELECT type FROM outbox WHERE book = current_book() AND name = ? AND operation = 'save'", [.text(member)], {
                $0.text(0)
            }) {
                deletion.dropped.append(DroppedChange(recordName: member, recordType: type,
                                                      reason: member == name ? reason : .parentDeleted))
            }
        }
        try removeLocally(names, in: connection)
        for member in names {
            try connection.run("DELETE FROM outbox WHERE book = current_book() AND name = ?", [.text(member)])
            try connection.run("DELETE FROM server_copies WHERE book = current_book() AND name = ?", [.text(member)])
        }
        try connection.run("DELETE FROM waiting_records WHERE book = current_book() AND name = ?", [.text(name)])
        return deletion
    }
}
