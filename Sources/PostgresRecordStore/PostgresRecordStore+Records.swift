import Foundation
import PostgresNIO
import RecordModel
import RecordStore

extension PostgresRecordStore {
    package func lookupRecords(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String]) async throws -> [Result<StoredRecord, ServerError>] {
        guard recordNames.count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) records per lookup")
        }
        let privateDatabaseID = scope.kind != .shared ? try await databaseID(scope) : 0
        return try await read { connection in
            let addressed = try await self.addressedZone(scope, zone, privateDatabaseID: privateDatabaseID, connection)
            let zoneRow = addressed.row
            let zoneID = addressed.zoneID
            var found: [String: StoredRecord] = [:]
            for row in try await connection.query(
                """
                SELECT \(unescaped: PostgresRecordStore.recordColumns) FROM records
                WHERE zone_id = \(zoneRow.id) AND name = ANY(\(recordNames)) AND deleted = 0
                """, logger: self.logger
            ).collect() {
                let record = try PostgresRecordStore.storedRecord(row, zoneID: zoneID)
                found[record.recordName] = try await self.attachShare(record, zoneRowID: zoneRow.id, caller: scope.userRecordName, connection)
            }
            return recordNames.map { name in
                guard let record = found[name] else {
                    return .failure(ServerError(.notFound, "record '\(name)' does not exist").with(recordName: name))
                }
                return .success(record)
            }
        }
    }

    /// Changes after the token's sequence, in sequence order, each record once in its latest
    /// state, read in one snapshot. Sequences commit in order (see the type's comment), so a
    /// client following `moreComing` never skips a change, whichever daemon wrote it.
    package func zoneChanges(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                            recordTypes: Set<String>?) async throws -> ZoneChangesPage
    {
        let caller = scope.userRecordName
        let page = try await readZoneFeed(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit,
                                          recordTypes: recordTypes) { rows, zoneID, zoneRowID, connection in
            var changes: [RecordChange] = []
            for row in rows {
                let record = try PostgresRecordStore.storedRecord(row, zoneID: zoneID)
                changes.append(try PostgresRecordStore.isDeleted(row)
                    ? .deleted(recordName: record.recordName, recordType: record.recordType)
                    : .changed(try await self.attachShare(record, zoneRowID: zoneRowID, caller: caller, connection)))
            }
            return changes
        }
        return ZoneChangesPage(zoneID: page.zoneID, changes: page.rows, syncToken: page.token, moreComing: page.moreComing)
    }

    /// `zoneChanges` with its records as JSON written from the rows' bytes (`RecordJSONWriter`):
    /// no string decoded per column, the stored fields JSON spliced as it is.
    package func zoneChangesJSON(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                                 recordTypes: Set<String>?, options: RecordJSONOptions) async throws -> SerializedRecordPage
    {
        let caller = scope.userRecordName
        let page = try await readZoneFeed(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit,
                                          recordTypes: recordTypes) { rows, zoneID, zoneRowID, connection in
            var writer = RecordJSONWriter(rows: rows.count, options: options)
            writer.setZone(zoneID)
            for row in rows {
                let copied = try PostgresRecordStore.withRowBytes(row) { bytes in
                    guard bytes.deleted || bytes.isCopiedAsStored(options) else { return false }
                    writer.appendStored(bytes)
                    return true
                }
                if copied { continue }
                let record = try PostgresRecordStore.storedRecord(row, zoneID: zoneID)
                writer.append(try await self.attachShare(record, zoneRowID: zoneRowID, caller: caller, connection))
            }
            return writer.finish()
        }
        return SerializedRecordPage(zoneID: page.zoneID, records: page.rows, syncToken: page.token, moreComing: page.moreComing)
    }

    /// One page of a zone's feed in one snapshot: its rows of `recordColumns` and `seq` (of
    /// `recordTypes`) made into `Rows` by `make` within the transaction (a share's members are
    /// read there), with the zone, the page's token and `moreComing`.
    private func readZoneFeed<Rows: Sendable>(
        _ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int, recordTypes: Set<String>?,
        make: @escaping @Sendable ([PostgresRow], ZoneID, Int64, PostgresConnection) async throws -> Rows
    ) async throws -> (rows: Rows, zoneID: ZoneID, token: String, moreComing: Bool) {
        let limit = StoreLimits.clampLimit(resultsLimit, maximum: StoreLimits.maximumResultsLimit)
        let privateDatabaseID = scope.kind != .shared ? try await databaseID(scope) : 0
        return try await read { connection in
            let addressed = try await self.addressedZone(scope, zone, privateDatabaseID: privateDatabaseID, connection)
            let zoneRow = addressed.row
            let databaseID = addressed.databaseID
            let since: Int64
            switch try FeedRules.zoneStart(syncToken, storeID: self.storeID, zone: zoneRow) {
            case .since(let sequence):
                since = sequence
            case .otherZone(let rowID):
                let recreated = try await !connection.query(
                    "SELECT 1 FROM zones WHERE id = \(rowID) AND database_id = \(databaseID) AND name = \(zoneRow.name) AND deleted = 1",
                    logger: self.logger
                ).collect().isEmpty
                throw FeedRules.otherZoneError(recreated: recreated, zoneName: zoneRow.name)
            }
            var rows = try await connection.query(
                """
                SELECT \(unescaped: PostgresRecordStore.recordColumns), seq FROM records
                WHERE zone_id = \(zoneRow.id) AND seq > \(since) ORDER BY seq LIMIT \(Int64(limit + 1))
                """, logger: self.logger
            ).collect()
            let moreComing = rows.count > limit
            if moreComing { rows.removeLast(rows.count - limit) }
            var lastSequence = try rows.last.map { try $0.makeRandomAccess()[12].decode(Int64.self) } ?? since
            if let recordTypes { rows = try rows.filter { recordTypes.contains(try $0.makeRandomAccess()[1].decode(String.self)) } }
            if !moreComing { lastSequence = max(lastSequence, zoneRow.seq) }
            let token = FeedRules.token(.zone, storeID: self.storeID, ownerID: zoneRow.id, sequence: lastSequence)
            return (try await make(rows, addressed.zoneID, zoneRow.id, connection), addressed.zoneID, token, moreComing)
        }
    }

    package func databaseChanges(_ scope: DatabaseScope, syncToken: String?, resultsLimit: Int) async throws -> DatabaseChangesPage {
        if scope.kind == .shared { return try await engine.sharedDatabaseChanges(scope, syncToken: syncToken) }
        let limit = StoreLimits.clampLimit(resultsLimit, maximum: StoreLimits.maximumResultsLimit)
        let databaseID = try await databaseID(scope)
        return try await read { connection in
            let row = try await connection.query("SELECT db_seq, purged_seq FROM databases WHERE id = \(databaseID)", logger: self.logger)
                .collect().first
            var (current, purged): (Int64, Int64) = (0, 0)
            if let row { (current, purged) = try row.decode((Int64, Int64).self) }
            let since = try FeedRules.databaseStart(syncToken, storeID: self.storeID, databaseID: databaseID, purgedSeq: purged)
            var zones: [(zoneID: ZoneID, deleted: Bool)] = []
            var lastSequence = since
            var moreComing = false
            for row in try await connection.query(
                """
                SELECT name, deleted, db_seq FROM zones WHERE database_id = \(databaseID) AND db_seq > \(since)
                ORDER BY db_seq LIMIT \(Int64(limit + 1))
                """, logger: self.logger
            ).collect() {
                if zones.count == limit { moreComing = true; break }
                let (name, deleted, dbSeq) = try row.decode((String, Int64, Int64).self)
                zones.append((self.zoneID(name, scope), deleted != 0))
                lastSequence = dbSeq
            }
            if !moreComing { lastSequence = max(lastSequence, current) }
            let token = FeedRules.token(.database, storeID: self.storeID, ownerID: databaseID, sequence: lastSequence)
            return DatabaseChangesPage(zones: zones, syncToken: token, moreComing: moreComing)
        }
    }
}
