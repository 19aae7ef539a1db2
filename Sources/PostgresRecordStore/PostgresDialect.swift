import RecordStore

/// PostgreSQL's SQL: any number of daemons write, so a script locks the rows it reads for update
/// and takes advisory locks; `$n` placeholders; JSON arrays through `jsonb`; text sorts by locale
/// unless told `COLLATE "C"`.
package struct PostgresDialect: SQLDialect {
    package init() {}

    package var kind: SQLDialectKind { .postgres }

    /// `$1`, `$2`, … for each `?`; a `?` inside a quoted literal or identifier is text.
    package func placeholders(_ sql: String) -> String {
        guard sql.utf8.contains(UInt8(ascii: "?")) else { return sql }
        var result = ""
        result.reserveCapacity(sql.utf8.count + 16)
        var number = 0
        var quote: Character?
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
                result.append(character)
            } else if character == "'" || character == "\"" {
                quote = character
                result.append(character)
            } else if character == "?" {
                number += 1
                result += "$\(number)"
            } else {
                result.append(character)
            }
        }
        return result
    }

    package var forUpdate: String { " FOR UPDATE" }
    package func forUpdate(of tables: String...) -> String { " FOR UPDATE OF " + tables.joined(separator: ", ") }

    /// JSON as text.
    package var payloadType: StoreColumnType { .text }

    /// The transaction advisory lock on the key's hash.
    package func transactionLock(namespace: Int32) -> String? { "SELECT pg_advisory_xact_lock(\(namespace), hashtext(?))" }

    package var numbersNotificationsPerDatabase: Bool { true }

    package func isInJSONArray(_ column: String) -> String { "\(column) = ANY(ARRAY(SELECT jsonb_array_elements_text(?::jsonb)))" }

    package func jsonArrayElements(as alias: String) -> String {
        "jsonb_array_elements_text(?::jsonb) WITH ORDINALITY AS \(alias)(value, position)"
    }

    /// The probe is a `LATERAL` subquery the planner cannot turn into a join: with the zone's
    /// statistics out of date, as they are while a first batch fills it, it otherwise scanned the
    /// whole zone and compared every row with every name (17 ms for a 400-record batch in a zone
    /// of 1,600). The `liveOnly` condition stays outside the probe, where it cannot steer
    /// PostgreSQL to the partial index of live records, which has no name to probe.
    package func recordsNamed(left: Bool, liveOnly: Bool) -> String {
        let live = liveOnly ? "r.deleted = 0" : "true"
        return "FROM \(jsonArrayElements(as: "asked")) \(left ? "LEFT JOIN" : "JOIN") LATERAL "
            + "(SELECT * FROM records WHERE zone_id = ? AND name = asked.value LIMIT 1) r ON \(live)"
    }

    package func isPairInJSONArray(_ first: String, _ second: String) -> String {
        "(\(first), \(second)) IN (SELECT e->>0, e->>1 FROM jsonb_array_elements(?::jsonb) e)"
    }

    /// The transaction-scoped advisory lock.
    package func exclusiveLock(_ key: Int64) -> String? { "SELECT pg_advisory_xact_lock(\(key))" }

    /// The server keeps its files itself.
    package var fileCheck: String? { nil }

    /// Text columns otherwise sort by locale.
    package func inByteOrder(_ column: String) -> String { "\(column) COLLATE \"C\"" }
    package func inRecordNameOrder(_ column: String) -> String { "(\(column) COLLATE \"default\")" }
}
