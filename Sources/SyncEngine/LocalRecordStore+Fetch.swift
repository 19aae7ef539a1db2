import RecordClient
import RecordModel
import SQLiteDB

/// The receiving side: applying pages of the change feed.
extension LocalRecordStore {
    /// What applying one page did.
    struct PageOutcome {
        var applied: [AppliedChange] = []
        var savedCount = 0
        /// Local edits an interrupted send had delivered, found on the server: sent after all.
        var settledSendCount = 0
        var deletedCount = 0
        var conflicts = 0
        var conflictDetails: [ConflictDetail] = []
        var dropped: [DroppedChange] = []
    }

    /// Applies one page of the change feed and stores its token, in one transaction: tombstones
    /// delete the local record and its cascade (whatever was pending for them), records are
    /// applied parents first and merged with pending local edits, and records whose required
    /// records have not arrived are kept waiting.
    func applyFetchedPage(_ page: ZoneChangesPage, tokenKey: String) throws -> PageOutcome {
        try transaction { connection in
            var outcome = PageOutcome()
            let waiting = try connection.map("SELECT record FROM waiting_records WHERE book = current_book()") { row in
                try Record(responseJSON: try JSONValue.parse(row.blob(0)))
            }
            // One look-up for the page: records nothing here knows are stored without a merge.
            let known = try Self.knownNames(among: page.changes.map(\.recordName), in: connection)
            // While refetching from scratch, every record the feed holds is marked seen.
            for case .saved(let record) in page.changes where known.contains(record.recordName) {
                try connection.run("UPDATE server_copies SET seen = 1 WHERE book = current_book() AND name = ?", [.text(record.recordName)])
            }
            let waitingNames = Set(waiting.map(\.recordName))
            let plan = ChangeApplyPlanner.plan(changes: page.changes, waiting: waiting) { name in
                (try? Self.exists(name, in: connection)) ?? false
            }
            // Who deleted each record, where its tombstone says: named in watch lines like a writer.
            var deleters: [String: String] = [:]
            for case .deleted(let name, _, let deleter?) in page.changes { deleters[name] = deleter }
            var newWriters = Set(deleters.values)
            for name in plan.deletions {
                let deletion = try Self.applyRemoteDeletion(of: name, deletedBy: deleters[name], in: connection)
                outcome.applied += deletion.applied
                outcome.dropped += deletion.dropped
                outcome.deletedCount += deletion.applied.count  // the record and its local cascade: the same total whatever the feed order
            }
            for record in plan.saves {
                guard known.contains(record.recordName) || waitingNames.contains(record.recordName) else {
                    try Self.insertNewServerRecord(record, serverJSON: page.serverJSON[record.recordName], in: connection)
                    Self.collectWriters(of: record, into: &newWriters)
                    outcome.applied.append(AppliedChange(kind: .saved, record: record))
                    outcome.savedCount += 1
                    continue
                }
                try connection.run("DELETE FROM waiting_records WHERE book = current_book() AND name = ?", [.text(record.recordName)])
                let known = try Self.serverCopy(named: record.recordName, in: connection)
                if let known, known.recordChangeTag == record.recordChangeTag, record.recordChangeTag != nil,
                   try Self.exists(record.recordName, in: connection)
                {
                    continue  // our own write coming back, or a record already applied
                }
                let merge = try Self.mergeServerRecord(record, merge: fieldMerge, in: connection)
                if let applied = merge.applied {
                    outcome.applied.append(applied)
                    outcome.savedCount += 1
                }
                if merge.hadConflict { outcome.conflicts += 1 }
                if merge.settledEarlierSend { outcome.settledSendCount += 1 }
                outcome.conflictDetails += merge.conflicts
            }
            try Self.rememberWriters(newWriters, in: connection)
            for entry in plan.waiting {
                try connection.run("""
                    INSERT INTO waiting_records(book, name, record, missing) VALUES(current_book(), ?, ?, ?)
                    ON CONFLICT(book, name) DO UPDATE SET record = excluded.record, missing = excluded.missing
                    """, [.text(entry.record.recordName), .blob(entry.record.json().serialized()), .text(entry.missingRecordName)])
            }
            try Self.setSetting(tokenKey, page.syncToken, in: connection)
            return outcome
        }
    }

    /// The number of fetched records waiting for a record they require.
    public func waitingRecordCount() throws -> Int {
        try withConnection { Int(try $0.scalarInt("SELECT COUNT(*) FROM waiting_records WHERE book = current_book()") ?? 0) }
    }

    /// Forgets the change token and marks every server copy unseen, before reading the feed
    /// from the beginning.
    func beginRefetchFromScratch(tokenKey: String, flagKey: String) throws {
        try transaction { connection in
            try connection.run("UPDATE server_copies SET seen = 0 WHERE book = current_book()")
            try Self.setSetting(tokenKey, nil, in: connection)
            try Self.setSetting(flagKey, "1", in: connection)
        }
    }

    /// After reading the feed from the beginning: a local record whose server copy the feed no
    /// longer holds was deleted on the server, so it is deleted here too. Records never sent
    /// have no server copy and stay, to be sent.
    func finishRefetchFromScratch(flagKey: String) throws -> RemoteDeletion {
        try transaction { connection in
            let gone = try connection.map("SELECT name FROM server_copies WHERE book = current_book() AND seen = 0") { $0.text(0) }
            var deletion = RemoteDeletion()
            for name in gone {
                deletion += try Self.applyRemoteDeletion(of: name, in: connection)
            }
            try Self.setSetting(flagKey, nil, in: connection)
            return deletion
        }
    }

    /// The zone was deleted on the server and created again empty: nothing local is on the
    /// server any more, so every local record is queued to be sent again.
    func resetForRecreatedZone(tokenKey: String, flagKey: String) throws {
        try transaction { connection in
            try Self.forgetServerCopies(in: connection)
            let records = try connection.map("SELECT name, type FROM records WHERE book = current_book() ORDER BY rowid") { ($0.text(0), $0.text(1)) }
            for (name, type) in records { try Self.queue(name, type: type, operation: .save, in: connection) }
            try Self.setSetting(tokenKey, nil, in: connection)
            try Self.setSetting(flagKey, nil, in: connection)
        }
    }

    /// Forgets everything learned from a server (copies, tokens, waiting records) while keeping
    /// local records, and queues them all: for a store adopted by a new account.
    func forgetServerState(keepingSettings keep: Set<String>) throws {
        try transaction { connection in
            try Self.forgetServerCopies(in: connection)
            let keys = try connection.map("SELECT key FROM settings WHERE book IN (0, current_book())") { $0.text(0) }
            for key in keys where !keep.contains(key) && key != "outboxSequence" {
                try Self.setSetting(key, nil, in: connection)
            }
            let records = try connection.map("SELECT name, type FROM records WHERE book = current_book() ORDER BY rowid") { ($0.text(0), $0.text(1)) }
            for (name, type) in records { try Self.queue(name, type: type, operation: .save, in: connection) }
        }
    }

    /// Drops what the server was last known to hold (copies, sent states, waiting records,
    /// writers, queued deletions) and the outbox's attempts, keeping local records and edits.
    static func forgetServerCopies(in connection: SQLiteConnection) throws {
        try connection.execute("""
            DELETE FROM server_copies WHERE book = current_book(); DELETE FROM sent_states WHERE book = current_book();
            DELETE FROM waiting_records WHERE book = current_book(); DELETE FROM outbox WHERE book = current_book() AND operation = 'delete';
            DELETE FROM server_writers WHERE book = current_book();
            """)
        try connection.run("UPDATE outbox SET attempts = 0, parked_reason = NULL WHERE book = current_book()")
    }
}
