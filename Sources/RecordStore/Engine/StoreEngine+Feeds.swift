import RecordModel

/// A zone's change feed and a database's zone feed, each page read in one snapshot.
///
/// A zone's page is one statement: the zone's row and its records after the token's sequence
/// (`zonePageStatement(_:)`), so on PostgreSQL a page costs one round trip. Only a page that holds the
/// zone's share record (whose members are read apart) or a shared zone (whose access is checked
/// first) is read in a transaction of a few statements.
extension StoreEngine {
    /// The columns a record is read with, in the order `RecordRowBytes` and `storedRecord` expect.
    static let recordColumns = """
        name, type, tag, deleted, fields, parent, created_at, created_by, created_device, modified_at, modified_by, modified_device
        """

    /// A page of a zone's feed and its arguments: rows of `recordColumns`, the record's sequence
    /// in 12 (NULL in a row without a record), and the zone's row id, sequence and purged sequence
    /// in 13–15 (NULL in a row without them). No row: no such zone.
    package static func zonePage(_ kind: SQLDialectKind, databaseID: Int64, zoneName: String, after sequence: Int64,
                                 limit: Int) -> (sql: String, arguments: [SQLValue])
    {
        kind == .sqlite
            ? (zonePageJoinStatement, [.int(sequence), .int(databaseID), .text(zoneName), .int(Int64(limit))])
            : (zonePageUnionStatement, [.int(databaseID), .text(zoneName), .int(databaseID), .text(zoneName), .int(sequence), .int(Int64(limit))])
    }

    /// SQLite: the zone's columns on every record row, by a join (a zone without records after the
    /// sequence gives one row without a record). SQLite walks `records_seq` in order inside the
    /// one zone row and hands each row over as read; the union below makes it copy every row
    /// through a co-routine, which cost 0.8–1.5 µs a record of the feed's 1.3–1.5 µs of reading.
    static let zonePageJoinStatement = """
        SELECT \(recordColumnsOfR), r.seq, z.id, z.seq, z.purged_seq
        FROM zones z LEFT JOIN records r ON r.zone_id = z.id AND r.seq > ?
        WHERE z.database_id = ? AND z.name = ? AND z.deleted = 0 ORDER BY r.seq LIMIT ?
        """

    /// PostgreSQL: the zone's row, then its records. PostgreSQL would sort every later record
    /// of the join above (a nested loop does not keep the inner index's order), so the page is a
    /// union whose second part is read along `records_seq` and stops at the limit.
    static let zonePageUnionStatement = """
        SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, CAST(NULL AS BIGINT), id, seq, purged_seq
        FROM zones WHERE database_id = ? AND name = ? AND deleted = 0
        UNION ALL
        SELECT * FROM (SELECT \(recordColumns), seq, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT) FROM records
            WHERE zone_id = (SELECT id FROM zones WHERE database_id = ? AND name = ? AND deleted = 0) AND seq > ?
            ORDER BY seq LIMIT ?) page
        """

    /// Changes after the token's sequence, in sequence order, each record once in its latest state.
    /// Sequences commit in order (a database's writers take turns on its row), so a client
    /// following `moreComing` never skips a change, whichever process wrote it.
    package func zoneChanges(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                             recordTypes: Set<String>?) async throws -> ZoneChangesPage
    {
        let page = try await readZoneFeed(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes,
                                          start: { [RecordChange]() }) { changes, row, zoneID, shareJSON in
            if row.int(3) != 0 {
                // The tombstone row's modified columns are the deletion's (the deleter's, for a cascade too).
                let deleter = row.text(10)
                let modified = deleter.isEmpty ? nil : ChangeStamp(timestamp: row.int(9), userRecordName: deleter, deviceID: row.optionalText(11))
                return changes.append(.deleted(recordName: row.text(0), recordType: row.text(1), modified: modified))
            }
            changes.append(.changed(Self.storedRecord(row, zoneID: zoneID, shareJSON: shareJSON)))
        } finish: { $0 }
        return ZoneChangesPage(zoneID: page.zoneID, changes: page.records, syncToken: page.token, moreComing: page.moreComing)
    }

    /// `zoneChanges` with its records as JSON written from the rows' bytes while they are read
    /// (`RecordJSONWriter`): the stored fields spliced as they are, no string made per column.
    package func zoneChangesJSON(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                                 recordTypes: Set<String>?, options: RecordJSONOptions) async throws -> SerializedRecordPage
    {
        let rows = StoreLimits.clampLimit(resultsLimit, maximum: StoreLimits.maximumResultsLimit)
        let page = try await readZoneFeed(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes,
                                          start: { RecordJSONWriter(rows: rows, options: options) }) { writer, row, zoneID, shareJSON in
            Self.write(row, into: &writer, zoneID: zoneID, shareJSON: shareJSON)
        } finish: { $0.finish() }
        return SerializedRecordPage(zoneID: page.zoneID, records: page.records, syncToken: page.token, moreComing: page.moreComing)
    }

    /// A row of `recordColumns`: copied as stored where the options allow, else read as a record.
    static func write(_ row: any StoreCursor, into writer: inout RecordJSONWriter, zoneID: ZoneID, shareJSON: [UInt8]?) {
        writer.setZone(zoneID)
        let bytes = recordRowBytes(row)
        if bytes.deleted || bytes.isCopiedAsStored(writer.options) { return writer.appendStored(bytes) }
        writer.append(storedRecord(row, zoneID: zoneID, shareJSON: shareJSON))
    }

    static func recordRowBytes(_ row: any StoreCursor) -> RecordRowBytes {
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        return RecordRowBytes(name: row.bytes(0) ?? empty, type: row.bytes(1) ?? empty, tag: row.bytes(2) ?? empty, deleted: row.int(3) != 0,
                              fields: row.bytes(4) ?? empty, parent: row.bytes(5), createdAt: row.int(6), createdBy: row.bytes(7) ?? empty,
                              createdDevice: row.bytes(8), modifiedAt: row.int(9), modifiedBy: row.bytes(10) ?? empty,
                              modifiedDevice: row.bytes(11))
    }

    /// A row of `recordColumns` as a record; the zone's share record gets its members.
    static func storedRecord(_ row: any StoreCursor, zoneID: ZoneID, shareJSON: [UInt8]?) -> StoredRecord {
        var record = StoredRecord(recordName: row.text(0), recordType: row.text(1), changeTag: row.text(2),
                                  fieldsJSON: row.bytes(4).map { Array($0) } ?? [], parent: row.optionalText(5),
                                  created: ChangeStamp(timestamp: row.int(6), userRecordName: row.text(7), deviceID: row.optionalText(8)),
                                  modified: ChangeStamp(timestamp: row.int(9), userRecordName: row.text(10), deviceID: row.optionalText(11)),
                                  zoneID: zoneID)
        if record.recordName == ShareRules.recordName { record.shareJSON = shareJSON }
        return record
    }

    /// A page's records, the zone they are in, the page's token and whether more is coming.
    struct FeedPage<Records: Sendable>: Sendable {
        var records: Records
        var zoneID: ZoneID
        var token: String
        var moreComing: Bool
    }

    /// Reads one page of a zone's feed: `start` makes the page's builder, `add` hands it each
    /// row of `recordColumns` (its type among `recordTypes`) with the zone's share members where
    /// read, and `finish` makes the page's records.
    private func readZoneFeed<Builder, Records: Sendable>(
        _ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int, recordTypes: Set<String>?,
        start: @escaping @Sendable () -> Builder,
        add: @escaping @Sendable (inout Builder, any StoreCursor, ZoneID, [UInt8]?) -> Void,
        finish: @escaping @Sendable (consuming Builder) -> Records
    ) async throws -> FeedPage<Records> {
        let limit = StoreLimits.clampLimit(resultsLimit, maximum: StoreLimits.maximumResultsLimit)
        // The token's own checks need no row; its zone and retention are checked against the zone's row.
        let since = try syncToken.map { token -> Int64 in
            let decoded = try SyncToken(decoding: token, expectedKind: .zone)
            guard decoded.storeID == storeID else { throw ServerError.badRequest("syncToken belongs to another server") }
            return decoded.sequence
        } ?? 0
        /// The page in `databaseID`'s zone `zoneName`; `shareJSON` is nil until the share's members
        /// were read, and the page is nil when it holds the live share record before they were.
        @Sendable func page(_ databaseID: Int64, _ zoneName: String, _ zoneID: ZoneID, shareJSON: [UInt8]??,
                            _ connection: any StoreConnection) async throws -> FeedPage<Records>?
        {
            var builder = start()
            var zoneRow: ZoneRow?
            var lastSequence = since
            var rowsRead = 0
            var moreComing = false
            var shareMembersNeeded = false
            let statement = Self.zonePage(connection.dialect.kind, databaseID: databaseID, zoneName: zoneName, after: since, limit: limit + 1)
            try await connection.forEachRow(statement.sql, statement.arguments) { row in
                if zoneRow == nil, !row.isNull(13) {
                    zoneRow = ZoneRow(id: row.int(13), name: zoneName, seq: row.int(14), purgedSeq: row.int(15))
                }
                if row.isNull(12) { return }
                rowsRead += 1
                if rowsRead > limit { moreComing = true; return }
                if shareMembersNeeded { return }
                lastSequence = row.int(12)
                if let recordTypes, !recordTypes.contains(row.text(1)) { return }
                guard let shareJSON else {
                    if row.int(3) == 0, row.bytes(0).map(RecordRowBytes.isShareRecordName) == true {
                        shareMembersNeeded = true
                        return
                    }
                    return add(&builder, row, zoneID, nil)
                }
                add(&builder, row, zoneID, shareJSON)
            }
            guard let zoneRow else { throw ZoneRules.notFound(zone) }
            if shareMembersNeeded { return nil }
            if case .otherZone(let rowID) = try FeedRules.zoneStart(syncToken, storeID: storeID, zone: zoneRow) {
                let recreated = try await zoneWasRecreated(tokenZoneRowID: rowID, databaseID: databaseID, name: zoneName, connection)
                throw FeedRules.otherZoneError(recreated: recreated, zoneName: zoneName)
            }
            if !moreComing { lastSequence = max(lastSequence, zoneRow.seq) }
            let token = FeedRules.token(.zone, storeID: storeID, ownerID: zoneRow.id, sequence: lastSequence)
            return FeedPage(records: finish(builder), zoneID: zoneID, token: token, moreComing: moreComing)
        }
        let caller = scope.userRecordName
        if scope.kind != .shared {
            let databaseID = try await databaseID(scope)
            let zoneID = self.zoneID(zone.zoneName, scope)
            if let read = try await driver.readStatement({ try await page(databaseID, zone.zoneName, zoneID, shareJSON: nil, $0) }) { return read }
        }
        // A shared zone's access is checked, or the share's members read, in the page's snapshot.
        let privateDatabaseID = scope.kind != .shared ? try await databaseID(scope) : 0
        return try await driver.read { connection in
            let addressed = try await self.addressedZone(scope, zone, privateDatabaseID: privateDatabaseID, connection)
            let shareJSON = try await self.shareJSON(zoneRowID: addressed.row.id, caller: caller, connection)
            guard let read = try await page(addressed.databaseID, addressed.row.name, addressed.zoneID, shareJSON: .some(shareJSON), connection)
            else { throw ServerError(.internalError, "a feed page read with its share's members asked for them") }
            return read
        }
    }

    /// Whether a token's zone row is an earlier incarnation of a zone of the same name in the
    /// same database (deleted, then created again).
    func zoneWasRecreated(tokenZoneRowID: Int64, databaseID: Int64, name: String, _ connection: any StoreConnection) async throws -> Bool {
        try await connection.first("SELECT 1 FROM zones WHERE id = ? AND database_id = ? AND name = ? AND deleted = 1",
                                   [.int(tokenZoneRowID), .int(databaseID), .text(name)]) != nil
    }

    /// The zones created or deleted after the token's sequence (a private or public database;
    /// the shared database's feed is the sharing domain's).
    package func databaseChanges(_ scope: DatabaseScope, syncToken: String?, resultsLimit: Int) async throws -> DatabaseChangesPage {
        let limit = StoreLimits.clampLimit(resultsLimit, maximum: StoreLimits.maximumResultsLimit)
        let databaseID = try await databaseID(scope)
        return try await driver.read { connection in
            let row = try await connection.first("SELECT db_seq, purged_seq FROM databases WHERE id = ?", [.int(databaseID)])
            let current = row?.int(0) ?? 0, purged = row?.int(1) ?? 0
            let since = try FeedRules.databaseStart(syncToken, storeID: self.storeID, databaseID: databaseID, purgedSeq: purged)
            var zones: [(zoneID: ZoneID, deleted: Bool)] = []
            var lastSequence = since
            var moreComing = false
            for row in try await connection.rows("SELECT name, deleted, db_seq FROM zones WHERE database_id = ? AND db_seq > ? ORDER BY db_seq LIMIT ?",
                                                 [.int(databaseID), .int(since), .int(Int64(limit + 1))]) {
                if zones.count == limit { moreComing = true; break }
                zones.append((self.zoneID(row.text(0), scope), row.int(1) != 0))
                lastSequence = row.int(2)
            }
            if !moreComing { lastSequence = max(lastSequence, current) }
            let token = FeedRules.token(.database, storeID: self.storeID, ownerID: databaseID, sequence: lastSequence)
            return DatabaseChangesPage(zones: zones, syncToken: token, moreComing: moreComing)
        }
    }

    /// The zone's share record's members as `caller` sees them (`StoredRecord.shareJSON`), or nil
    /// when the zone is not shared.
    func shareJSON(zoneRowID: Int64, caller: String, _ connection: any StoreConnection) async throws -> [UInt8]? {
        guard let share = try await loadShare(zoneRowID: zoneRowID, connection) else { return nil }
        return ShareRules.shareJSON(share, participants: try await loadParticipants(zoneRowID: zoneRowID, connection), callerRecordName: caller)
    }
}
