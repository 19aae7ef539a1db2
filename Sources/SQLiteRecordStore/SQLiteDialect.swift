import RecordStore

/// SQLite's SQL: one writer holds the whole database, so no row locks, advisory locks or
/// per-database numbering; JSON arrays through `json_each`; text compares in byte order already.
package struct SQLiteDialect: SQLDialect {
    package init() {}

    package var kind: SQLDialectKind { .sqlite }

    /// SQLite takes `?` as it is.
    package func placeholders(_ sql: String) -> String { sql }

    package var forUpdate: String { "" }
    package func forUpdate(of tables: String...) -> String { "" }

    /// JSON as bytes.
    package var payloadType: StoreColumnType { .blob }

    package func transactionLock(namespace: Int32) -> String? { nil }
    package var numbersNotificationsPerDatabase: Bool { false }

    package func isInJSONArray(_ column: String) -> String { "\(column) IN (SELECT value FROM json_each(?))" }

    package func jsonArrayElements(as alias: String) -> String { "(SELECT value, key AS position FROM json_each(?)) \(alias)" }

    package func recordsNamed(left: Bool, liveOnly: Bool) -> String {
        let live = liveOnly ? "r.deleted = 0" : "true"
        // CROSS JOIN keeps the names as the outer loop: SQLite never reorders it, where an
        // inner JOIN let it scan the zone and compare each row with every name.
        return "FROM \(jsonArrayElements(as: "asked")) \(left ? "LEFT JOIN" : "CROSS JOIN") records r "
            + "ON r.zone_id = ? AND r.name = asked.value AND \(live)"
    }

    package func isPairInJSONArray(_ first: String, _ second: String) -> String {
        "(\(first), \(second)) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"
    }

    package func exclusiveLock(_ key: Int64) -> String? { nil }

    package var fileCheck: String? { "PRAGMA integrity_check" }

    /// Binary is SQLite's default collation.
    package func inByteOrder(_ column: String) -> String { column }
    package func inRecordNameOrder(_ column: String) -> String { column }
}
