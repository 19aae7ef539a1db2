import RecordModel
import SQLiteDB

/// What differs between SQLite's SQL and PostgreSQL's in the statements the engine writes.
/// Scripts write `?` placeholders and standard SQL (`ON CONFLICT … DO UPDATE`, `RETURNING`);
/// the few clauses that differ come from here.
package struct SQLDialect: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        case sqlite
        case postgres
    }

    package let kind: Kind

    package static let sqlite = SQLDialect(kind: .sqlite)
    package static let postgres = SQLDialect(kind: .postgres)

    /// `sql` with its `?` placeholders written as the database expects them: unchanged for
    /// SQLite, `$1`, `$2`, … for PostgreSQL. A `?` inside a quoted literal or identifier is text.
    package func placeholders(_ sql: String) -> String {
        guard kind == .postgres, sql.utf8.contains(UInt8(ascii: "?")) else { return sql }
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

    /// The clause that locks the rows a `SELECT` read until the transaction ends: PostgreSQL
    /// only (SQLite's single writer already holds the whole database).
    package var forUpdate: String { kind == .postgres ? " FOR UPDATE" : "" }

    /// `forUpdate` naming the tables of a join whose rows it locks (`FOR UPDATE OF d, z`).
    package func forUpdate(of tables: String...) -> String { kind == .postgres ? " FOR UPDATE OF " + tables.joined(separator: ", ") : "" }

    /// How a notification's payload is stored (bytes on SQLite, JSON text on PostgreSQL).
    package var payloadType: StoreColumnType { kind == .postgres ? .text : .blob }

    /// How a record's fields JSON is stored (bytes on SQLite, text on PostgreSQL).
    package var fieldsType: StoreColumnType { payloadType }

    /// JSON bytes as the column of type `payloadType`/`fieldsType` takes them.
    package func jsonValue(_ bytes: [UInt8]) -> SQLValue {
        kind == .postgres ? .text(String(decoding: bytes, as: UTF8.self)) : .blob(bytes)
    }

    /// A statement that makes the transaction's writers of one key (a container's development
    /// schema) take turns until it ends: PostgreSQL's transaction advisory lock on the key's hash;
    /// nil on SQLite, whose single writer already takes turns. Binds the key to its one `?`.
    package func transactionLock(namespace: Int32) -> String? {
        kind == .postgres ? "SELECT pg_advisory_xact_lock(\(namespace), hashtext(?))" : nil
    }

    /// Whether notification ids are numbered per database (`databases.note_seq`, PostgreSQL: any
    /// daemon may add one) rather than by the table's own row id (SQLite's one writer).
    package var numbersNotificationsPerDatabase: Bool { kind == .postgres }

    /// `ON CONFLICT (key) DO UPDATE SET c = excluded.c, …`: the same text on both, here so a
    /// script names only the key and the columns it replaces.
    package func upsert(conflict key: [String], update columns: [String]) -> String {
        let target = "ON CONFLICT (\(key.joined(separator: ", ")))"
        guard !columns.isEmpty else { return target + " DO NOTHING" }
        return target + " DO UPDATE SET " + columns.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
    }

    /// A condition that `column` is one of the strings of a JSON array bound to a single `?`
    /// (`SQLDialect.jsonArray`): one statement however many names, and one cached plan.
    package func isInJSONArray(_ column: String) -> String {
        switch kind {
        case .sqlite: return "\(column) IN (SELECT value FROM json_each(?))"
        case .postgres: return "\(column) = ANY(ARRAY(SELECT jsonb_array_elements_text(?::jsonb)))"
        }
    }

    /// A table `alias` of the strings of a JSON array bound to one `?` (`SQLDialect.jsonArray`):
    /// columns `value` and `position` (increasing in the array's order), a row for each element,
    /// repeated ones included.
    package func jsonArrayElements(as alias: String) -> String {
        switch kind {
        case .sqlite: return "(SELECT value, key AS position FROM json_each(?)) \(alias)"
        case .postgres: return "jsonb_array_elements_text(?::jsonb) WITH ORDINALITY AS \(alias)(value, position)"
        }
    }

    /// `FROM` the strings of a JSON array bound to the first `?` (table `asked`, as
    /// `jsonArrayElements`) joined to their `records` rows in the zone bound to the second `?`
    /// (table `r`; `left`: a name without a row still gives a row, `r`'s columns NULL). Each name
    /// is one probe of the records' primary key on both databases. On PostgreSQL the probe is a
    /// `LATERAL` subquery the planner cannot turn into a join: with the zone's statistics out of
    /// date, as they are while a first batch fills it, it otherwise scanned the whole zone and
    /// compared every row with every name (17 ms for a 400-record batch in a zone of 1,600).
    /// (`liveOnly`: tombstones count as absent. The condition stays outside the probe, where it
    /// cannot steer PostgreSQL to the partial index of live records, which has no name to probe.)
    package func recordsNamed(left: Bool, liveOnly: Bool) -> String {
        let live = liveOnly ? "r.deleted = 0" : "true"
        switch kind {
        case .sqlite:
            // CROSS JOIN keeps the names as the outer loop: SQLite never reorders it, where an
            // inner JOIN let it scan the zone and compare each row with every name.
            return "FROM \(jsonArrayElements(as: "asked")) \(left ? "LEFT JOIN" : "CROSS JOIN") records r "
                + "ON r.zone_id = ? AND r.name = asked.value AND \(live)"
        case .postgres:
            return "FROM \(jsonArrayElements(as: "asked")) \(left ? "LEFT JOIN" : "JOIN") LATERAL "
                + "(SELECT * FROM records WHERE zone_id = ? AND name = asked.value LIMIT 1) r ON \(live)"
        }
    }

    /// The JSON array text bound for `isInJSONArray`.
    package static func jsonArray(_ names: [String]) -> String {
        JSONValue.array(names.map { .string($0) }).serializedString()
    }

    /// A condition that the pair of columns `(first, second)` is one of the pairs of a JSON array
    /// of two-string arrays bound to a single `?` (`SQLDialect.jsonPairs`): a batch of assets
    /// named by scope and checksum in one statement that still uses the pair's index.
    package func isPairInJSONArray(_ first: String, _ second: String) -> String {
        switch kind {
        case .sqlite: return "(\(first), \(second)) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"
        case .postgres: return "(\(first), \(second)) IN (SELECT e->>0, e->>1 FROM jsonb_array_elements(?::jsonb) e)"
        }
    }

    /// The JSON array text bound for `isPairInJSONArray`.
    package static func jsonPairs(_ pairs: [(String, String)]) -> String {
        JSONValue.array(pairs.map { .array([.string($0.0), .string($0.1)]) }).serializedString()
    }

    /// A JSON document (a subscription's definition) as its column stores it: the same type as a
    /// notification's payload.
    package func jsonDocument(_ bytes: [UInt8]) -> SQLValue {
        payloadType == .text ? .text(String(decoding: bytes, as: UTF8.self)) : .blob(bytes)
    }

    /// A statement that makes the rest of the transaction the only one holding `key` across every
    /// process on the database (PostgreSQL's transaction-scoped advisory lock), nil where one
    /// writer already excludes all others (SQLite).
    package func exclusiveLock(_ key: Int64) -> String? {
        kind == .postgres ? "SELECT pg_advisory_xact_lock(\(key))" : nil
    }

    /// The database's own check of its file, answering one row `ok` when sound (SQLite); nil
    /// where the server keeps its files itself (PostgreSQL).
    package var fileCheck: String? { kind == .sqlite ? "PRAGMA integrity_check" : nil }
}
