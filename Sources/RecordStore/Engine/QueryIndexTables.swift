/// The query index's tables (`query_index`, `query_counts`) as the engine's scripts write them.
enum QueryIndexTables {
    /// Inserts `query_index` rows (zone id, record type, field, sort key, record name).
    static func insertEntries(_ entries: [[SQLValue]], _ connection: any StoreConnection) async throws {
        try await connection.insertRows(into: "query_index", columns: [StoreColumn("zone_id", .integer), StoreColumn("record_type", .text),
                                                                       StoreColumn("field", .text), StoreColumn("sort_key", .text),
                                                                       StoreColumn("record_name", .text)], rows: entries)
    }

    /// Adds count changes to the zone's `query_counts`.
    static func addCounts(_ counts: [QueryIndex.CountKey: Int64], zone zoneRowID: Int64, _ connection: any StoreConnection) async throws {
        try await addCounts(rows: counts.filter { $0.value != 0 }.map { [.int(zoneRowID), .text($0.key.recordType), .text($0.key.field), .int($0.value)] },
                            connection)
    }

    /// Adds `query_counts` rows (zone id, record type, field, entries) to the counts there.
    static func addCounts(rows: [[SQLValue]], _ connection: any StoreConnection) async throws {
        try await connection.insertRows(into: "query_counts", columns: [StoreColumn("zone_id", .integer), StoreColumn("record_type", .text),
                                                                        StoreColumn("field", .text), StoreColumn("entries", .integer)],
                                        rows: rows,
                                        suffix: "ON CONFLICT (zone_id, record_type, field) DO UPDATE SET entries = query_counts.entries + excluded.entries")
    }
}
