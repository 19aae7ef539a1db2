import RecordModel

/// `records/query` through the query index (`QueryIndex`): `QueryCursor` plans the scans, each a
/// bounded index range, read in one snapshot. A field a query filters or sorts on is indexed the
/// first time it is asked for (`indexFields`); every later write keeps its entries.
extension StoreEngine {
    package func queryRecords(_ scope: DatabaseScope, zone: ZoneID, query: RecordQuery, resultsLimit: Int,
                              continuationMarker: String?) async throws -> QueryPage
    {
        let limit = StoreLimits.clampLimit(resultsLimit, maximum: StoreLimits.maximumQueryResults)
        let privateDatabaseID = scope.kind != .shared ? try await databaseID(scope) : 0
        let firstTry = try await readQueryPage(scope, zone: zone, query: query, limit: limit, continuationMarker: continuationMarker,
                                               privateDatabaseID: privateDatabaseID, checkIndex: true)
        switch firstTry {
        case .page(let page):
            return page
        case .indexFirst(let zoneRowID, let fields):
            try await indexFields(fields, type: query.recordType, zone: zoneRowID)
            // The fields are indexed now: this read answers.
            let secondTry = try await readQueryPage(scope, zone: zone, query: query, limit: limit, continuationMarker: continuationMarker,
                                                    privateDatabaseID: privateDatabaseID, checkIndex: false)
            guard case .page(let page) = secondTry else { throw ServerError(.internalError, "query fields not indexed") }
            return page
        }
    }

    /// A query's read: its page, or the fields it needs that the zone does not index yet.
    private enum QueryRead: Sendable {
        case page(QueryPage)
        case indexFirst(zone: Int64, fields: Set<String>)
    }

    private func readQueryPage(_ scope: DatabaseScope, zone: ZoneID, query: RecordQuery, limit: Int, continuationMarker: String?,
                               privateDatabaseID: Int64, checkIndex: Bool) async throws -> QueryRead
    {
        try await driver.read { connection in
            let addressed = try await self.addressedZone(scope, zone, privateDatabaseID: privateDatabaseID, connection)
            var cursor = try QueryCursor(query: query, limit: limit, continuationMarker: continuationMarker, zoneRowID: addressed.row.id)
            let wanted = cursor.indexedFields
            if checkIndex, !wanted.isEmpty {
                let have = try await connection.rows("SELECT field FROM query_fields WHERE zone_id = ? AND record_type = ?",
                                                     [.int(addressed.row.id), .text(query.recordType)]).map { $0.text(0) }
                let missing = wanted.subtracting(have)
                if !missing.isEmpty { return .indexFirst(zone: addressed.row.id, fields: missing) }
            }
            return .page(try await self.runQuery(&cursor, addressed, caller: scope.userRecordName, connection))
        }
    }

    /// The scans of a planned query, in the caller's read transaction.
    private func runQuery(_ cursor: inout QueryCursor, _ addressed: AddressedZone, caller: String, _ connection: any StoreConnection)
        async throws -> QueryPage
    {
        let zoneRowID = addressed.row.id
        let type = cursor.query.recordType
        if let field = cursor.coverageField {
            var byField: [String: Int64] = [:]
            for row in try await connection.rows(
                "SELECT field, entries FROM query_counts WHERE zone_id = ? AND record_type = ? AND field IN (?, ?)",
                [.int(zoneRowID), .text(type), .text(field), .text(QueryIndex.recordCountField)])
            {
                byField[row.text(0)] = row.int(1)
            }
            cursor.coverage(indexed: byField[field] ?? 0, live: byField[QueryIndex.recordCountField] ?? 0)
        }
        while let scan = cursor.nextScan() {
            try cursor.consume(try await self.scan(scan, zone: zoneRowID, type: type, zoneID: addressed.zoneID, connection))
        }
        var page = cursor.page()
        var records: [StoredRecord] = []
        for record in page.records {
            records.append(try await attachShare(record, zoneRowID: zoneRowID, caller: caller, connection))
        }
        page.records = records
        return page
    }

    /// One bounded read of a query (see `QueryScan`).
    private func scan(_ scan: QueryScan, zone zoneRowID: Int64, type: String, zoneID: ZoneID, _ connection: any StoreConnection)
        async throws -> [(record: StoredRecord, key: String?)]
    {
        let (sql, arguments) = Self.statement(for: scan, zone: zoneRowID, type: type, connection.dialect)
        var withKey = false
        if case .byKey = scan { withKey = true }
        var found: [(record: StoredRecord, key: String?)] = []
        try await connection.forEachRow(sql, arguments) { row in
            found.append((Self.storedRecord(row, zoneID: zoneID, shareJSON: nil), withKey ? row.text(12) : nil))
        }
        return found
    }

    /// A scan's statement. Names and keys compare in byte order (`SQLDialect.inByteOrder`), the
    /// order the indexes on names and `query_index` are built in.
    static func statement(for scan: QueryScan, zone zoneRowID: Int64, type: String, _ dialect: any SQLDialect) -> (sql: String, arguments: [SQLValue]) {
        let columns = recordColumnsOfR
        let name = dialect.inByteOrder("r.name")
        switch scan {
        case .byName(let after, let count):
            return ("SELECT \(columns) FROM records r WHERE r.zone_id = ? AND r.type = ? AND r.deleted = 0 AND \(name) > ? ORDER BY \(name) LIMIT ?",
                    [.int(zoneRowID), .text(type), .text(after ?? ""), .int(Int64(count))])
        case .withoutKey(let field, let after, let count):
            return ("""
                SELECT \(columns) FROM records r WHERE r.zone_id = ? AND r.type = ? AND r.deleted = 0 AND \(name) > ?
                AND NOT EXISTS (SELECT 1 FROM query_index q WHERE q.zone_id = r.zone_id AND q.record_name = \(name) AND q.field = ?)
                ORDER BY \(name) LIMIT ?
                """, [.int(zoneRowID), .text(type), .text(after ?? ""), .text(field), .int(Int64(count))])
        case .byKey(let field, let lower, let upper, let descending, let after, let count):
            var sql = """
                SELECT \(columns), q.sort_key FROM query_index q JOIN records r ON r.zone_id = q.zone_id AND r.name = \(dialect.inRecordNameOrder("q.record_name"))
                WHERE q.zone_id = ? AND q.record_type = ? AND q.field = ?
                """
            var arguments: [SQLValue] = [.int(zoneRowID), .text(type), .text(field)]
            if let lower { sql += " AND q.sort_key >= ?"; arguments.append(.text(lower)) }
            if let upper { sql += " AND q.sort_key <= ?"; arguments.append(.text(upper)) }
            if let after {
                sql += " AND (q.sort_key \(descending ? "<" : ">") ? OR (q.sort_key = ? AND q.record_name > ?))"
                arguments += [.text(after.key), .text(after.key), .text(after.recordName)]
            }
            sql += " ORDER BY q.sort_key \(descending ? "DESC" : "ASC"), q.record_name ASC LIMIT ?"
            arguments.append(.int(Int64(count)))
            return (sql, arguments)
        }
    }

    /// The database's plan for the first scan of a query (SQLite's `EXPLAIN QUERY PLAN` details),
    /// for tests that check every shape of query reads through an index.
    package func queryPlan(_ scope: DatabaseScope, zone: ZoneID, query: RecordQuery, resultsLimit: Int) async throws -> [String] {
        let databaseID = try await databaseID(scope)
        return try await driver.read { connection in
            let zoneRow = try await self.requireZone(databaseID, zone, connection)
            var cursor = try QueryCursor(query: query, limit: resultsLimit, continuationMarker: nil, zoneRowID: zoneRow.id)
            guard let scan = cursor.nextScan() else { return [] }
            let (sql, arguments) = Self.statement(for: scan, zone: zoneRow.id, type: query.recordType, connection.dialect)
            return try await connection.rows("EXPLAIN QUERY PLAN " + sql, arguments).map { $0.text(3) }
        }
    }

    // MARK: The index

    /// Indexes `fields` of `type` in the zone from now on: registers them and adds the entries and
    /// counts of the type's live records, in one transaction holding the zone's row, as every
    /// record write does, so no write in between misses the new fields.
    func indexFields(_ fields: Set<String>, type: String, zone zoneRowID: Int64) async throws {
        try await driver.write { connection in
            if !connection.dialect.forUpdate.isEmpty {
                try await connection.execute("SELECT id FROM zones WHERE id = ?" + connection.dialect.forUpdate, [.int(zoneRowID)])
            }
            let added = Set(try await connection.insertRows(
                into: "query_fields", columns: [StoreColumn("zone_id", .integer), StoreColumn("record_type", .text), StoreColumn("field", .text)],
                rows: fields.sorted().map { [.int(zoneRowID), .text(type), .text($0)] }, suffix: "ON CONFLICT DO NOTHING RETURNING field"
            ).map { $0.text(0) })
            guard !added.isEmpty else { return }
            let name = connection.dialect.inByteOrder("name")
            var counts: [QueryIndex.CountKey: Int64] = [:]
            var after = ""
            // Chunks of 1000 records in name order: each statement stays small however large the zone.
            while true {
                let rows = try await connection.rows(
                    "SELECT name, fields FROM records WHERE zone_id = ? AND type = ? AND deleted = 0 AND \(name) > ? ORDER BY \(name) LIMIT 1000",
                    [.int(zoneRowID), .text(type), .text(after)])
                var entries: [[SQLValue]] = []
                for row in rows {
                    for entry in QueryIndex.entries(row.blob(1), indexed: added) {
                        entries.append([.int(zoneRowID), .text(type), .text(entry.field), .text(entry.key), .text(row.text(0))])
                        counts[QueryIndex.CountKey(recordType: type, field: entry.field), default: 0] += 1
                    }
                }
                try await QueryIndexTables.insertEntries(entries, connection)
                guard rows.count == 1000, let last = rows.last else { break }
                after = last.text(0)
            }
            try await QueryIndexTables.addCounts(counts, zone: zoneRowID, connection)
        }
    }

    /// Migration 2 on PostgreSQL: the index entries and counts of every live record already
    /// stored (`QueryIndexBackfill`).
    package static func backfillQueryIndex(_ connection: any StoreConnection) async throws {
        var backfill = QueryIndexBackfill()
        while true {
            let rows = try await connection.rows(QueryIndexBackfill.statement, backfill.after)
            let chunk = backfill.entries(of: rows.map { (zone: $0.int(0), name: $0.text(1), type: $0.text(2), fields: $0.blob(3)) })
            try await QueryIndexTables.insertEntries(chunk.entries, connection)
            guard chunk.more else { break }
        }
        try await QueryIndexTables.addCounts(rows: backfill.countRows, connection)
    }
}

/// The walk of migration 2 over every live record already stored, in chunks of 1000 in
/// (zone, name) order (each statement stays small however large the store), noting the index
/// entries of each chunk and the counts of all. SQLite runs it in its synchronous migration,
/// PostgreSQL through the engine's `backfillQueryIndex`.
package struct QueryIndexBackfill {
    /// The next chunk: binds `after`.
    package static let statement =
        "SELECT zone_id, name, type, fields FROM records WHERE deleted = 0 AND (zone_id, name) > (?, ?) ORDER BY zone_id, name LIMIT 1000"
    /// Where the next chunk starts.
    package private(set) var after: [SQLValue] = [.int(Int64.min), .text("")]
    private var counts: [Int64: [QueryIndex.CountKey: Int64]] = [:]

    package init() {}

    /// A chunk's `query_index` rows (zone id, record type, field, sort key, record name), and
    /// whether another chunk may follow.
    package mutating func entries(of rows: [(zone: Int64, name: String, type: String, fields: [UInt8])]) -> (entries: [[SQLValue]], more: Bool) {
        var entries: [[SQLValue]] = []
        for row in rows {
            let recordEntries = QueryIndex.entries(row.fields)
            entries += recordEntries.map { [.int(row.zone), .text(row.type), .text($0.field), .text($0.key), .text(row.name)] }
            QueryIndex.countChanges(old: nil, new: (row.type, recordEntries), into: &counts[row.zone, default: [:]])
        }
        guard let last = rows.last, rows.count == 1000 else { return (entries, false) }
        after = [.int(last.zone), .text(last.name)]
        return (entries, true)
    }

    /// The `query_counts` rows (zone id, record type, field, entries) of every chunk read.
    package var countRows: [[SQLValue]] {
        counts.flatMap { zone, zoneCounts in
            zoneCounts.map { [.int(zone), .text($0.key.recordType), .text($0.key.field), .int($0.value)] }
        }
    }
}
