import Logging
import PostgresNIO
import RecordModel
import RecordStore

/// `records/query` through the query index, its upkeep in every write, and the schema migrations
/// (the same numbered list as SQLite's, `StoreMigration`).
extension PostgresRecordStore {
    package func queryRecords(_ scope: DatabaseScope, zone: ZoneID, query: RecordQuery, resultsLimit: Int,
                             continuationMarker: String?) async throws -> QueryPage
    {
        let limit = StoreLimits.clampLimit(resultsLimit, maximum: StoreLimits.maximumQueryResults)
        let privateDatabaseID = scope.kind != .shared ? try await databaseID(scope) : 0
        enum Outcome: Sendable { case page(QueryPage), indexFirst(zone: Int64, fields: Set<String>) }
        var indexed = false
        while true {
            let checkIndex = !indexed
            let outcome: Outcome = try await read { connection in
                let addressed = try await self.addressedZone(scope, zone, privateDatabaseID: privateDatabaseID, connection)
                var cursor = try QueryCursor(query: query, limit: limit, continuationMarker: continuationMarker, zoneRowID: addressed.row.id)
                let wanted = cursor.indexedFields
                if checkIndex, !wanted.isEmpty {
                    let have = try await connection.query(
                        "SELECT field FROM query_fields WHERE zone_id = \(addressed.row.id) AND record_type = \(query.recordType)", logger: self.logger
                    ).collect().map { try $0.decode(String.self) }
                    let missing = wanted.subtracting(have)
                    if !missing.isEmpty { return .indexFirst(zone: addressed.row.id, fields: missing) }
                }
                return .page(try await self.runQuery(&cursor, addressed, scope: scope, connection))
            }
            switch outcome {
            case .page(let page):
                return page
            case .indexFirst(let zoneRowID, let fields):
                try await indexFields(fields, type: query.recordType, zone: zoneRowID)
                indexed = true
            }
        }
    }

    /// The scans of a planned query, in the caller's read transaction.
    private func runQuery(_ cursor: inout QueryCursor, _ addressed: StoreEngine.AddressedZone, scope: DatabaseScope,
                          _ connection: PostgresConnection) async throws -> QueryPage
    {
            let zoneRow = addressed.row
            let zoneID = addressed.zoneID
            let query = cursor.query
            if let field = cursor.coverageField {
                var byField: [String: Int64] = [:]
                for row in try await connection.query(
                    """
                    SELECT field, entries FROM query_counts WHERE zone_id = \(zoneRow.id) AND record_type = \(query.recordType)
                    AND field IN (\(field), \(QueryIndex.recordCountField))
                    """, logger: self.logger
                ).collect() {
                    let (name, entries) = try row.decode((String, Int64).self)
                    byField[name] = entries
                }
                cursor.coverage(indexed: byField[field] ?? 0, live: byField[QueryIndex.recordCountField] ?? 0)
            }
            while let scan = cursor.nextScan() {
                try cursor.consume(try await self.scan(scan, zone: zoneRow.id, type: query.recordType, zoneID: zoneID, connection))
            }
            var page = cursor.page()
            var records: [StoredRecord] = []
            for record in page.records {
                records.append(try await self.attachShare(record, zoneRowID: zoneRow.id, caller: scope.userRecordName, connection))
            }
            page.records = records
            return page
    }

    /// Indexes `fields` of `type` in the zone from now on (`QueryIndex`): registers them and adds
    /// the entries and counts of the type's live records, in one transaction holding the zone's
    /// row, as every record write does, so no write in between misses the new fields.
    func indexFields(_ fields: Set<String>, type: String, zone zoneRowID: Int64) async throws {
        let logger = self.logger
        try await transaction { connection -> Outcome<Void> in
            try await connection.query("SELECT id FROM zones WHERE id = \(zoneRowID) FOR UPDATE", logger: logger)
            var added: Set<String> = []
            for field in fields.sorted() {
                let inserted = try await connection.query(
                    "INSERT INTO query_fields (zone_id, record_type, field) VALUES (\(zoneRowID), \(type), \(field)) ON CONFLICT DO NOTHING RETURNING field",
                    logger: logger
                ).collect()
                if !inserted.isEmpty { added.insert(field) }
            }
            var counts: [QueryIndex.CountKey: Int64] = [:]
            var after = ""
            while !added.isEmpty {
                let rows = try await connection.query(
                    """
                    SELECT name, fields FROM records WHERE zone_id = \(zoneRowID) AND type = \(type) AND deleted = 0
                    AND name COLLATE "C" > \(after) ORDER BY name COLLATE "C" LIMIT 1000
                    """, logger: logger
                ).collect().map { try $0.decode((String, String).self) }
                var names: [String] = [], entryFields: [String] = [], keys: [String] = []
                for (name, fieldsJSON) in rows {
                    for entry in QueryIndex.entries(Array(fieldsJSON.utf8), indexed: added) {
                        names.append(name)
                        entryFields.append(entry.field)
                        keys.append(entry.key)
                        counts[QueryIndex.CountKey(recordType: type, field: entry.field), default: 0] += 1
                    }
                }
                if !names.isEmpty {
                    try await connection.query(
                        """
                        INSERT INTO query_index (zone_id, record_type, field, sort_key, record_name)
                        SELECT \(zoneRowID), \(type), e.field, e.sort_key, e.record_name
                        FROM unnest(\(entryFields)::text[], \(keys)::text[], \(names)::text[]) AS e(field, sort_key, record_name)
                        """, logger: logger)
                }
                guard rows.count == 1000, let last = rows.last else { break }
                after = last.0
            }
            try await PostgresRecordStore.addIndexCounts(counts, zone: zoneRowID, connection, logger: logger)
            return .commit(())
        }
    }

    /// The zone's indexed fields by record type (`query_fields`).
    func indexedFields(zone zoneRowID: Int64, _ connection: PostgresConnection) async throws -> [String: Set<String>] {
        var fields: [String: Set<String>] = [:]
        for row in try await connection.query("SELECT record_type, field FROM query_fields WHERE zone_id = \(zoneRowID)", logger: logger).collect() {
            let (type, field) = try row.decode((String, String).self)
            fields[type, default: []].insert(field)
        }
        return fields
    }

    static let qualifiedRecordColumns = recordColumns.split(separator: ",")
        .map { "r." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", ")

    /// One bounded read of a query (see `QueryScan`). Names and keys compare in the "C" collation
    /// (byte order, as on SQLite), which `records_type_name` and `query_index` are built in.
    func scan(_ scan: QueryScan, zone zoneRowID: Int64, type: String, zoneID: ZoneID, _ connection: PostgresConnection) async throws
        -> [(record: StoredRecord, key: String?)]
    {
        let columns = PostgresRecordStore.qualifiedRecordColumns
        var bindings = PostgresBindings()
        func bind(_ value: String) -> String {
            bindings.append(value)
            return "$\(bindings.count)"
        }
        func bind(_ value: Int64) -> String {
            bindings.append(value)
            return "$\(bindings.count)"
        }
        var sql: String
        var withKey = false
        switch scan {
        case .byName(let after, let count):
            sql = """
                SELECT \(columns) FROM records r WHERE r.zone_id = \(bind(zoneRowID)) AND r.type = \(bind(type)) AND r.deleted = 0
                AND r.name COLLATE "C" > \(bind(after ?? "")) ORDER BY r.name COLLATE "C" LIMIT \(bind(Int64(count)))
                """
        case .withoutKey(let field, let after, let count):
            sql = """
                SELECT \(columns) FROM records r WHERE r.zone_id = \(bind(zoneRowID)) AND r.type = \(bind(type)) AND r.deleted = 0
                AND r.name COLLATE "C" > \(bind(after ?? ""))
                AND NOT EXISTS (SELECT 1 FROM query_index q WHERE q.zone_id = r.zone_id AND q.record_name = r.name COLLATE "C"
                    AND q.field = \(bind(field)))
                ORDER BY r.name COLLATE "C" LIMIT \(bind(Int64(count)))
                """
        case .byKey(let field, let lower, let upper, let descending, let after, let count):
            withKey = true
            sql = """
                SELECT \(columns), q.sort_key FROM query_index q
                JOIN records r ON r.zone_id = q.zone_id AND r.name = (q.record_name COLLATE "default")
                WHERE q.zone_id = \(bind(zoneRowID)) AND q.record_type = \(bind(type)) AND q.field = \(bind(field))
                """
            if let lower { sql += " AND q.sort_key >= \(bind(lower))" }
            if let upper { sql += " AND q.sort_key <= \(bind(upper))" }
            if let after {
                let key = bind(after.key)
                sql += " AND (q.sort_key \(descending ? "<" : ">") \(key) OR (q.sort_key = \(key) AND q.record_name > \(bind(after.recordName))))"
            }
            sql += " ORDER BY q.sort_key \(descending ? "DESC" : "ASC"), q.record_name ASC LIMIT \(bind(Int64(count)))"
        }
        return try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger).collect().map { row in
            (try PostgresRecordStore.storedRecord(row, zoneID: zoneID), withKey ? try row.makeRandomAccess()[12].decode(String.self) : nil)
        }
    }

    static func addIndexCounts(_ counts: [QueryIndex.CountKey: Int64], zone zoneRowID: Int64, _ connection: PostgresConnection,
                               logger: Logger) async throws
    {
        guard !counts.isEmpty else { return }
        let changes = Array(counts)
        let types = changes.map(\.key.recordType)
        let fields = changes.map(\.key.field)
        let deltas = changes.map(\.value)
        try await connection.query(
            """
            INSERT INTO query_counts (zone_id, record_type, field, entries)
            SELECT \(zoneRowID), c.record_type, c.field, c.entries FROM unnest(\(types)::text[], \(fields)::text[], \(deltas)::bigint[])
                AS c(record_type, field, entries)
            ON CONFLICT (zone_id, record_type, field) DO UPDATE SET entries = query_counts.entries + EXCLUDED.entries
            """, logger: logger)
    }

    /// Brings the schema to `StoreMigration.latestVersion` in the caller's transaction (which holds
    /// the store's advisory lock): no tables is version 0, a store without a recorded version is 1.
    static func migrate(_ connection: PostgresConnection, tablesExist: Bool, logger: Logger) async throws {
        var version = 0
        if tablesExist {
            let recorded = try await connection.query("SELECT value FROM meta WHERE key = 'schema_version'", logger: logger)
                .collect().first?.decode(String.self)
            version = recorded.flatMap { Int($0) } ?? 1
        }
        let steps = try StoreMigration.pending(from: version)
        for step in steps {
            for statement in step.postgres { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            if step.backfillsQueryIndex { try await backfillQueryIndex(connection, logger: logger) }
        }
        if !steps.isEmpty {
            try await connection.query(
                """
                INSERT INTO meta (key, value) VALUES ('schema_version', \(String(StoreMigration.latestVersion)))
                ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value
                """, logger: logger)
        }
    }

    /// Migration 2: the index entries and counts of every live record already stored, read in
    /// chunks (each statement stays well under the statement timeout).
    static func backfillQueryIndex(_ connection: PostgresConnection, logger: Logger) async throws {
        var counts: [Int64: [QueryIndex.CountKey: Int64]] = [:]
        var after: (zone: Int64, name: String) = (Int64.min, "")
        while true {
            let rows = try await connection.query(
                """
                SELECT zone_id, name, type, fields FROM records WHERE deleted = 0 AND (zone_id, name) > (\(after.zone), \(after.name))
                ORDER BY zone_id, name LIMIT 1000
                """, logger: logger
            ).collect().map { try $0.decode((Int64, String, String, String).self) }
            for (zone, name, type, fields) in rows {
                let entries = QueryIndex.entries(Array(fields.utf8))
                if !entries.isEmpty {
                    try await connection.query(
                        """
                        INSERT INTO query_index (zone_id, record_type, field, sort_key, record_name)
                        SELECT \(zone), \(type), e.field, e.sort_key, \(name)
                        FROM unnest(\(entries.map(\.field))::text[], \(entries.map(\.key))::text[]) AS e(field, sort_key)
                        """, logger: logger)
                }
                QueryIndex.countChanges(old: nil, new: (type, entries), into: &counts[zone, default: [:]])
            }
            guard let last = rows.last, rows.count == 1000 else { break }
            after = (last.0, last.1)
        }
        for (zone, zoneCounts) in counts {
            try await addIndexCounts(zoneCounts, zone: zone, connection, logger: logger)
        }
    }
}
