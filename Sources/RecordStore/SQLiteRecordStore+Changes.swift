import RecordModel
import SQLiteDB

extension SQLiteRecordStore {
    package static let maximumResultsLimit = StoreLimits.maximumResultsLimit

    static func clampLimit(_ limit: Int, maximum: Int) -> Int { StoreLimits.clampLimit(limit, maximum: maximum) }

    static let recordColumns = """
        name, type, tag, deleted, fields, parent, created_at, created_by, created_device, modified_at, modified_by, modified_device
        """

    func readChange(_ row: SQLiteStatement, zoneID: ZoneID) -> RecordChange {
        let name = row.text(0), type = row.text(1)
        if row.int64(3) != 0 { return .deleted(recordName: name, recordType: type) }
        return .changed(storedRecord(row, zoneID: zoneID))
    }

    func storedRecord(_ row: SQLiteStatement, zoneID: ZoneID) -> StoredRecord {
        StoredRecord(recordName: row.text(0), recordType: row.text(1), changeTag: row.text(2), fieldsJSON: row.blob(4),
                     parent: row.optionalText(5),
                     created: ChangeStamp(timestamp: row.int64(6), userRecordName: row.text(7), deviceID: row.optionalText(8)),
                     modified: ChangeStamp(timestamp: row.int64(9), userRecordName: row.text(10), deviceID: row.optionalText(11)),
                     zoneID: zoneID)
    }

    /// Changes after the token's sequence, in sequence order, each record once in its latest state.
    /// The read runs in one snapshot, and sequences are assigned by the single writer in commit
    /// order, so a client following `moreComing` never skips a change.
    package func zoneChanges(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                            recordTypes: Set<String>?) throws -> ZoneChangesPage
    {
        var changes: [RecordChange] = []
        let (zoneID, token, moreComing) = try readZoneFeed(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit,
                                                           recordTypes: recordTypes) { row, zoneID, zoneRowID, connection in
            let change = readChange(row, zoneID: zoneID)
            guard case .changed(let record) = change, record.recordName == ShareRules.recordName else { return changes.append(change) }
            changes.append(.changed(try attachShare(record, zoneRowID: zoneRowID, caller: scope.userRecordName, connection)))
        }
        return ZoneChangesPage(zoneID: zoneID, changes: changes, syncToken: token, moreComing: moreComing)
    }

    /// `zoneChanges` with its records as JSON, written while the rows are read: a row is copied
    /// from SQLite's buffers, its stored fields as they are (`RecordJSONWriter`).
    package func zoneChangesJSON(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                                 recordTypes: Set<String>?, options: RecordJSONOptions) throws -> SerializedRecordPage
    {
        var writer = RecordJSONWriter(rows: SQLiteRecordStore.clampLimit(resultsLimit, maximum: SQLiteRecordStore.maximumResultsLimit),
                                      options: options)
        let (zoneID, token, moreComing) = try readZoneFeed(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit,
                                                           recordTypes: recordTypes) { row, zoneID, zoneRowID, connection in
            try write(row, into: &writer, zoneID: zoneID, zoneRowID: zoneRowID, caller: scope.userRecordName, connection)
        }
        return SerializedRecordPage(zoneID: zoneID, records: writer.finish(), syncToken: token, moreComing: moreComing)
    }

    /// A row of `recordColumns`: copied as stored where the options allow, else read as a record.
    private func write(_ row: SQLiteStatement, into writer: inout RecordJSONWriter, zoneID: ZoneID, zoneRowID: Int64, caller: String,
                       _ connection: SQLiteConnection) throws
    {
        writer.setZone(zoneID)
        let bytes = RecordRowBytes(name: row.bytes(0), type: row.bytes(1), tag: row.bytes(2), deleted: row.int64(3) != 0,
                                   fields: row.bytes(4), parent: row.optionalBytes(5), createdAt: row.int64(6), createdBy: row.bytes(7),
                                   createdDevice: row.optionalBytes(8), modifiedAt: row.int64(9), modifiedBy: row.bytes(10),
                                   modifiedDevice: row.optionalBytes(11))
        if bytes.deleted || bytes.isCopiedAsStored(writer.options) { return writer.appendStored(bytes) }
        let record = storedRecord(row, zoneID: zoneID)
        writer.append(record.recordName == ShareRules.recordName
            ? try attachShare(record, zoneRowID: zoneRowID, caller: caller, connection) : record)
    }

    /// Reads one page of a zone's feed in one snapshot, handing each row of `recordColumns` (its
    /// type among `recordTypes`) to `row`; returns the zone, the page's token and `moreComing`.
    private func readZoneFeed(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int, recordTypes: Set<String>?,
                              row handle: (SQLiteStatement, ZoneID, Int64, SQLiteConnection) throws -> Void) throws
        -> (ZoneID, String, Bool)
    {
        let limit = SQLiteRecordStore.clampLimit(resultsLimit, maximum: SQLiteRecordStore.maximumResultsLimit)
        return try database.readSync { connection in
            try connection.readTransaction {
                let addressed = try addressedZone(scope, zone, privateDatabaseID: scope.kind != .shared ? try databaseID(scope) : 0, connection)
                let databaseID = addressed.databaseID
                let zoneRow = addressed.row
                let since: Int64
                switch try FeedRules.zoneStart(syncToken, storeID: storeID, zone: zoneRow) {
                case .since(let sequence):
                    since = sequence
                case .otherZone(let rowID):
                    let recreated = try zoneWasRecreated(tokenZoneRowID: rowID, databaseID: databaseID, name: zoneRow.name, connection)
                    throw FeedRules.otherZoneError(recreated: recreated, zoneName: zoneRow.name)
                }
                let zoneID = addressed.zoneID
                var lastSequence = since
                var moreComing = false
                var rowsRead = 0
                try connection.query(
                    "SELECT \(SQLiteRecordStore.recordColumns), seq FROM records WHERE zone_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                    [.int(zoneRow.id), .int(since), .int(Int64(limit + 1))]
                ) { row in
                    rowsRead += 1
                    if rowsRead > limit { moreComing = true; return }
                    lastSequence = row.int64(12)
                    if let recordTypes, !recordTypes.contains(row.text(1)) { return }
                    try handle(row, zoneID, zoneRow.id, connection)
                }
                if !moreComing { lastSequence = max(lastSequence, zoneRow.seq) }
                let token = SyncToken(kind: .zone, storeID: storeID, ownerID: zoneRow.id, sequence: lastSequence).encoded
                return (zoneID, token, moreComing)
            }
        }
    }

    /// A token from an earlier incarnation of a zone of the same name in the same database.
    private func zoneWasRecreated(tokenZoneRowID: Int64, databaseID: Int64, name: String, _ connection: SQLiteConnection) throws -> Bool {
        try connection.scalarInt("SELECT 1 FROM zones WHERE id = ? AND database_id = ? AND name = ? AND deleted = 1",
                                 [.int(tokenZoneRowID), .int(databaseID), .text(name)]) != nil
    }

    package func databaseChanges(_ scope: DatabaseScope, syncToken: String?, resultsLimit: Int) throws -> DatabaseChangesPage {
        let limit = SQLiteRecordStore.clampLimit(resultsLimit, maximum: SQLiteRecordStore.maximumResultsLimit)
        return try database.readSync { connection in
            try connection.readTransaction {
                let databaseID = try databaseID(scope)
                let (current, purged) = try connection.first("SELECT db_seq, purged_seq FROM databases WHERE id = ?", [.int(databaseID)]) {
                    ($0.int64(0), $0.int64(1))
                } ?? (0, 0)
                let since = try FeedRules.databaseStart(syncToken, storeID: storeID, databaseID: databaseID, purgedSeq: purged)
                var zones: [(zoneID: ZoneID, deleted: Bool)] = []
                var lastSequence = since
                var moreComing = false
                try connection.query(
                    "SELECT name, deleted, db_seq FROM zones WHERE database_id = ? AND db_seq > ? ORDER BY db_seq LIMIT ?",
                    [.int(databaseID), .int(since), .int(Int64(limit + 1))]
                ) { row in
                    if zones.count == limit { moreComing = true; return }
                    zones.append((zoneID(row.text(0), scope), row.int64(1) != 0))
                    lastSequence = row.int64(2)
                }
                if !moreComing { lastSequence = max(lastSequence, current) }
                let token = SyncToken(kind: .database, storeID: storeID, ownerID: databaseID, sequence: lastSequence).encoded
                return DatabaseChangesPage(zones: zones, syncToken: token, moreComing: moreComing)
            }
        }
    }

    package func lookupRecords(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String]) throws -> [Result<StoredRecord, ServerError>] {
        var results: [Result<StoredRecord, ServerError>] = []
        try readLookup(scope, zone: zone, recordNames: recordNames) { name, row, zoneID, zoneRowID, connection in
            guard let row else { return results.append(.failure(SQLiteRecordStore.notFound(name))) }
            results.append(.success(try attachShare(storedRecord(row, zoneID: zoneID), zoneRowID: zoneRowID, caller: scope.userRecordName,
                                                    connection)))
        }
        return results
    }

    /// `lookupRecords` as JSON, written while the rows are read (see `zoneChangesJSON`).
    package func lookupRecordsJSON(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String], options: RecordJSONOptions) throws
        -> SerializedRecords
    {
        var writer = RecordJSONWriter(rows: recordNames.count, options: options)
        try readLookup(scope, zone: zone, recordNames: recordNames) { name, row, zoneID, zoneRowID, connection in
            guard let row else { return writer.append(SQLiteRecordStore.notFound(name)) }
            try write(row, into: &writer, zoneID: zoneID, zoneRowID: zoneRowID, caller: scope.userRecordName, connection)
        }
        return writer.finish()
    }

    private static func notFound(_ name: String) -> ServerError {
        ServerError(.notFound, "record '\(name)' does not exist").with(recordName: name)
    }

    /// Reads each named live record in one snapshot, in the order asked, through one prepared
    /// statement; `row` is nil for a name not found.
    private func readLookup(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String],
                            row handle: (String, SQLiteStatement?, ZoneID, Int64, SQLiteConnection) throws -> Void) throws
    {
        guard recordNames.count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) records per lookup")
        }
        try database.readSync { connection in
            try connection.readTransaction {
                let addressed = try addressedZone(scope, zone, privateDatabaseID: scope.kind != .shared ? try databaseID(scope) : 0, connection)
                for name in recordNames {
                    var found = false
                    try connection.query(
                        "SELECT \(SQLiteRecordStore.recordColumns) FROM records WHERE zone_id = ? AND name = ? AND deleted = 0",
                        [.int(addressed.row.id), .text(name)]
                    ) { row in
                        found = true
                        try handle(name, row, addressed.zoneID, addressed.row.id, connection)
                    }
                    if !found { try handle(name, nil, addressed.zoneID, addressed.row.id, connection) }
                }
            }
        }
    }

    /// Reads one row of the schema: throws when the file cannot be read.
    package func checkReadable() throws {
        _ = try database.readSync { try $0.scalarInt("SELECT COUNT(*) FROM meta") }
    }

    package func statistics() throws -> StoreStatistics {
        try database.readSync { connection in
            StoreStatistics(
                records: Int(try connection.scalarInt("SELECT COUNT(*) FROM records WHERE deleted = 0") ?? 0),
                zones: Int(try connection.scalarInt("SELECT COUNT(*) FROM zones WHERE deleted = 0") ?? 0),
                notifications: Int(try connection.scalarInt("SELECT COUNT(*) FROM notifications") ?? 0))
        }
    }

    package func purgeTombstones(olderThanMilliseconds age: Int64) throws -> Int {
        let cutoff = clock() - age
        return try database.writeSync { connection in
            try connection.transaction {
                // Each zone remembers the newest sequence purged: tokens older than that are expired.
                try connection.run(
                    """
                    UPDATE zones SET purged_seq = (SELECT MAX(seq) FROM records r WHERE r.zone_id = zones.id AND r.deleted = 1
                        AND r.modified_at < ?) WHERE EXISTS (SELECT 1 FROM records r WHERE r.zone_id = zones.id AND r.deleted = 1
                        AND r.modified_at < ?)
                    """, [.int(cutoff), .int(cutoff)])
                let removed = try connection.run("DELETE FROM records WHERE deleted = 1 AND modified_at < ?", [.int(cutoff)])
                try connection.run(
                    """
                    UPDATE databases SET purged_seq = (SELECT MAX(db_seq) FROM zones z WHERE z.database_id = databases.id
                        AND z.deleted = 1 AND z.deleted_at < ?) WHERE EXISTS (SELECT 1 FROM zones z
                        WHERE z.database_id = databases.id AND z.deleted = 1 AND z.deleted_at < ?)
                    """, [.int(cutoff), .int(cutoff)])
                try connection.run("DELETE FROM zones WHERE deleted = 1 AND deleted_at < ?", [.int(cutoff)])
                return removed
            }
        }
    }
}
