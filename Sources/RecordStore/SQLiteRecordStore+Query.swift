import Foundation
import RecordModel
import SQLiteDB

/// A value a filter or sort compares: numbers numerically, everything else as text
/// (a reference by its record name).
enum ComparableValue: Comparable {
    case number(Double)
    case text(String)

    init?(_ json: JSONValue) {
        switch json {
        case .int(let i): self = .number(Double(i))
        case .double(let d): self = .number(d)
        case .bool(let b): self = .number(b ? 1 : 0)
        case .string(let s): self = .text(s)
        case .object:
            guard let name = json["recordName"]?.stringValue else { return nil }
            self = .text(name)
        default: return nil
        }
    }

    static func < (lhs: ComparableValue, rhs: ComparableValue) -> Bool {
        switch (lhs, rhs) {
        case (.number(let a), .number(let b)): return a < b
        case (.text(let a), .text(let b)): return a < b
        case (.number, .text): return true
        case (.text, .number): return false
        }
    }
}

extension RecordQuery {
    /// Reads the `query` member of a `records/query` request.
    package init(json: JSONValue) throws {
        guard case .object = json, let type = json["recordType"]?.stringValue else {
            throw ServerError.badRequest("query.recordType must be a string")
        }
        try Names.validateIdentifier(type, what: "recordType")
        self.recordType = type
        self.filters = try (json["filterBy"]?.arrayValue ?? []).map { filter in
            guard let name = filter["comparator"]?.stringValue, let comparator = QueryComparator(rawValue: name) else {
                throw ServerError.badRequest("unknown comparator \(filter["comparator"]?.serializedString() ?? "(none)")")
            }
            guard let value = filter["fieldValue"]?["value"] else { throw ServerError.badRequest("a filter needs fieldValue.value") }
            switch comparator {
            case .in, .notIn:
                guard case .array = value else { throw ServerError.badRequest("\(name) needs a list value") }
            case .beginsWith:
                guard case .string = value else { throw ServerError.badRequest("BEGINS_WITH needs a string value") }
            default:
                guard ComparableValue(value) != nil else { throw ServerError.badRequest("\(name) needs a string, number or reference value") }
            }
            return QueryFilter(comparator: comparator, field: try QueryField(json: filter), value: value)
        }
        self.sorts = try (json["sortBy"]?.arrayValue ?? []).map { sort in
            QuerySort(field: try QueryField(json: sort), ascending: sort["ascending"]?.boolValue ?? true)
        }
        guard filters.count <= 32, sorts.count <= 8 else { throw ServerError.badRequest("too many filters or sorts") }
    }
}

extension QueryField {
    init(json: JSONValue) throws {
        if let system = json["systemFieldName"]?.stringValue {
            switch system {
            case "recordName": self = .recordName
            case "createdTimestamp": self = .createdTimestamp
            case "modifiedTimestamp": self = .modifiedTimestamp
            default: throw ServerError.badRequest("unknown systemFieldName '\(system)'")
            }
            return
        }
        guard let name = json["fieldName"]?.stringValue else { throw ServerError.badRequest("a filter or sort needs fieldName or systemFieldName") }
        try Names.validateIdentifier(name, what: "fieldName")
        self = .field(name)
    }
}

extension SQLiteRecordStore {
    package static let maximumQueryResults = StoreLimits.maximumQueryResults

    /// `records/query` through the query index (`QueryCursor` plans the scans; each is a bounded
    /// index range), in one read snapshot.
    package func queryRecords(_ scope: DatabaseScope, zone: ZoneID, query: RecordQuery, resultsLimit: Int,
                             continuationMarker: String?) throws -> QueryPage
    {
        let limit = SQLiteRecordStore.clampLimit(resultsLimit, maximum: SQLiteRecordStore.maximumQueryResults)
        enum Outcome { case page(QueryPage), indexFirst(zone: Int64, fields: Set<String>) }
        var indexed = false
        while true {
            let outcome: Outcome = try database.readSync { connection in
                try connection.readTransaction {
                    let addressed = try addressedZone(scope, zone, privateDatabaseID: scope.kind != .shared ? try databaseID(scope) : 0, connection)
                    var cursor = try QueryCursor(query: query, limit: limit, continuationMarker: continuationMarker, zoneRowID: addressed.row.id)
                    let wanted = cursor.indexedFields
                    if !indexed, !wanted.isEmpty {
                        let missing = wanted.subtracting(try connection.map(
                            "SELECT field FROM query_fields WHERE zone_id = ? AND record_type = ?", [.int(addressed.row.id), .text(query.recordType)]
                        ) { $0.text(0) })
                        if !missing.isEmpty { return .indexFirst(zone: addressed.row.id, fields: missing) }
                    }
                    return .page(try runQuery(&cursor, addressed, scope: scope, type: query.recordType, connection))
                }
            }
            switch outcome {
            case .page(let page):
                return page
            case .indexFirst(let zoneRowID, let fields):
                try indexFields(fields, type: query.recordType, zone: zoneRowID)
                indexed = true
            }
        }
    }

    /// The scans of a planned query, in the caller's read transaction.
    private func runQuery(_ cursor: inout QueryCursor, _ addressed: AddressedZone, scope: DatabaseScope, type: String,
                          _ connection: SQLiteConnection) throws -> QueryPage
    {
                let zoneRow = addressed.row
                let zoneID = addressed.zoneID
                let query = cursor.query
                if let field = cursor.coverageField {
                    let counts = try connection.map(
                        "SELECT field, entries FROM query_counts WHERE zone_id = ? AND record_type = ? AND field IN (?, ?)",
                        [.int(zoneRow.id), .text(query.recordType), .text(field), .text(QueryIndex.recordCountField)]
                    ) { ($0.text(0), $0.int64(1)) }
                    let byField = Dictionary(counts, uniquingKeysWith: { a, _ in a })
                    cursor.coverage(indexed: byField[field] ?? 0, live: byField[QueryIndex.recordCountField] ?? 0)
                }
                while let scan = cursor.nextScan() {
                    try cursor.consume(try self.scan(scan, zone: zoneRow.id, type: query.recordType, zoneID: zoneID, connection))
                }
                var page = cursor.page()
                page.records = try page.records.map { try attachShare($0, zoneRowID: zoneRow.id, caller: scope.userRecordName, connection) }
                return page
    }

    /// Indexes `fields` of `type` in the zone from now on (`QueryIndex`): registers them and adds
    /// the entries and counts of the type's live records, in one write transaction, so every
    /// later write keeps them.
    func indexFields(_ fields: Set<String>, type: String, zone zoneRowID: Int64) throws {
        try database.writeSync { connection in
            try connection.execute("BEGIN IMMEDIATE")
            do {
                var added: Set<String> = []
                for field in fields.sorted()
                where try connection.run("INSERT OR IGNORE INTO query_fields (zone_id, record_type, field) VALUES (?, ?, ?)",
                                         [.int(zoneRowID), .text(type), .text(field)]) > 0 {
                    added.insert(field)
                }
                var counts: [QueryIndex.CountKey: Int64] = [:]
                var after = ""
                while !added.isEmpty {
                    let rows = try connection.map(
                        "SELECT name, fields FROM records WHERE zone_id = ? AND type = ? AND deleted = 0 AND name > ? ORDER BY name LIMIT 1000",
                        [.int(zoneRowID), .text(type), .text(after)]
                    ) { (name: $0.text(0), fields: $0.blob(1)) }
                    for row in rows {
                        for entry in QueryIndex.entries(row.fields, indexed: added) {
                            try connection.run("INSERT INTO query_index (zone_id, record_type, field, sort_key, record_name) VALUES (?, ?, ?, ?, ?)",
                                               [.int(zoneRowID), .text(type), .text(entry.field), .text(entry.key), .text(row.name)])
                            counts[QueryIndex.CountKey(recordType: type, field: entry.field), default: 0] += 1
                        }
                    }
                    guard rows.count == 1000, let last = rows.last else { break }
                    after = last.name
                }
                try writeIndexCounts(counts, zone: zoneRowID, connection)
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// The zone's indexed fields by record type (`query_fields`).
    func indexedFields(zone zoneRowID: Int64, _ connection: SQLiteConnection) throws -> [String: Set<String>] {
        var fields: [String: Set<String>] = [:]
        try connection.query("SELECT record_type, field FROM query_fields WHERE zone_id = ?", [.int(zoneRowID)]) { row in
            fields[row.text(0), default: []].insert(row.text(1))
        }
        return fields
    }

    static let qualifiedRecordColumns = recordColumns.split(separator: ",")
        .map { "r." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", ")

    /// One bounded read of a query (see `QueryScan`).
    func scan(_ scan: QueryScan, zone zoneRowID: Int64, type: String, zoneID: ZoneID, _ connection: SQLiteConnection) throws
        -> [(record: StoredRecord, key: String?)]
    {
        let (sql, arguments) = SQLiteRecordStore.statement(for: scan, zone: zoneRowID, type: type)
        if case .byKey = scan {
            return try connection.map(sql, arguments) { (storedRecord($0, zoneID: zoneID), $0.text(12)) }
        }
        return try connection.map(sql, arguments) { (storedRecord($0, zoneID: zoneID), nil) }
    }

    static func statement(for scan: QueryScan, zone zoneRowID: Int64, type: String) -> (sql: String, arguments: [SQLValue]) {
        let columns = SQLiteRecordStore.qualifiedRecordColumns
        switch scan {
        case .byName(let after, let count):
            // records_type (zone_id, type) carries the primary key's name: a range in name order.
            return ("SELECT \(columns) FROM records r WHERE r.zone_id = ? AND r.type = ? AND r.deleted = 0 AND r.name > ? ORDER BY r.name LIMIT ?",
                    [.int(zoneRowID), .text(type), .text(after ?? ""), .int(Int64(count))])
        case .withoutKey(let field, let after, let count):
            return ("""
                SELECT \(columns) FROM records r WHERE r.zone_id = ? AND r.type = ? AND r.deleted = 0 AND r.name > ?
                AND NOT EXISTS (SELECT 1 FROM query_index q WHERE q.zone_id = r.zone_id AND q.record_name = r.name AND q.field = ?)
                ORDER BY r.name LIMIT ?
                """, [.int(zoneRowID), .text(type), .text(after ?? ""), .text(field), .int(Int64(count))])
        case .byKey(let field, let lower, let upper, let descending, let after, let count):
            var sql = """
                SELECT \(columns), q.sort_key FROM query_index q JOIN records r ON r.zone_id = q.zone_id AND r.name = q.record_name
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

    /// SQLite's plan for the scans of a query's first page (`EXPLAIN QUERY PLAN` lines), for tests.
    package func queryPlan(_ scope: DatabaseScope, zone: ZoneID, query: RecordQuery, resultsLimit: Int) throws -> [String] {
        try database.readSync { connection in
            let zoneRow = try requireZone(try databaseID(scope), zone, connection)
            var cursor = try QueryCursor(query: query, limit: resultsLimit, continuationMarker: nil, zoneRowID: zoneRow.id)
            guard let scan = cursor.nextScan() else { return [] }
            let (sql, arguments) = SQLiteRecordStore.statement(for: scan, zone: zoneRow.id, type: query.recordType)
            return try connection.map("EXPLAIN QUERY PLAN " + sql, arguments) { $0.text(3) }
        }
    }

    /// Replaces a record's index entries (`old`: the record as it was, nil when it was not live;
    /// `new`: as it is now, nil when deleted) and notes the count changes in the transaction.
    func reindex(_ name: String, old oldEntries: (type: String, entries: [QueryIndex.Entry])?,
                 new newEntries: (type: String, entries: [QueryIndex.Entry])?,
                 _ transaction: inout ModifyTransaction, _ connection: SQLiteConnection) throws
    {
        let zoneRowID = transaction.zone.id
        // Entries exist only for indexed fields: a type with none has nothing to delete.
        if let oldEntries, transaction.indexedFields[oldEntries.type] != nil {
            try connection.run("DELETE FROM query_index WHERE zone_id = ? AND record_name = ?", [.int(zoneRowID), .text(name)])
        }
        if let newEntries {
            for entry in newEntries.entries {
                try connection.run("INSERT INTO query_index (zone_id, record_type, field, sort_key, record_name) VALUES (?, ?, ?, ?, ?)",
                                   [.int(zoneRowID), .text(newEntries.type), .text(entry.field), .text(entry.key), .text(name)])
            }
        }
        QueryIndex.countChanges(old: oldEntries, new: newEntries, into: &transaction.indexCounts)
    }

    /// Adds a transaction's count changes to `query_counts`.
    func writeIndexCounts(_ counts: [QueryIndex.CountKey: Int64], zone zoneRowID: Int64, _ connection: SQLiteConnection) throws {
        for (key, delta) in counts where delta != 0 {
            try connection.run(
                """
                INSERT INTO query_counts (zone_id, record_type, field, entries) VALUES (?, ?, ?, ?)
                ON CONFLICT (zone_id, record_type, field) DO UPDATE SET entries = entries + excluded.entries
                """, [.int(zoneRowID), .text(key.recordType), .text(key.field), .int(delta)])
        }
    }

    /// Migration 2: the index entries and counts of every live record already stored.
    static func backfillQueryIndex(_ connection: SQLiteConnection) throws {
        var counts: [Int64: [QueryIndex.CountKey: Int64]] = [:]
        var after: (zone: Int64, name: String) = (Int64.min, "")
        while true {
            let rows = try connection.map(
                "SELECT zone_id, name, type, fields FROM records WHERE deleted = 0 AND (zone_id, name) > (?, ?) ORDER BY zone_id, name LIMIT 1000",
                [.int(after.zone), .text(after.name)]
            ) { (zone: $0.int64(0), name: $0.text(1), type: $0.text(2), fields: $0.blob(3)) }
            for row in rows {
                let entries = QueryIndex.entries(row.fields)
                for entry in entries {
                    try connection.run("INSERT INTO query_index (zone_id, record_type, field, sort_key, record_name) VALUES (?, ?, ?, ?, ?)",
                                       [.int(row.zone), .text(row.type), .text(entry.field), .text(entry.key), .text(row.name)])
                }
                QueryIndex.countChanges(old: nil, new: (row.type, entries), into: &counts[row.zone, default: [:]])
            }
            guard let last = rows.last, rows.count == 1000 else { break }
            after = (last.zone, last.name)
        }
        for (zone, zoneCounts) in counts {
            for (key, entries) in zoneCounts {
                try connection.run("INSERT INTO query_counts (zone_id, record_type, field, entries) VALUES (?, ?, ?, ?)",
                                   [.int(zone), .text(key.recordType), .text(key.field), .int(entries)])
            }
        }
    }
}
