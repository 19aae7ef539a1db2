import RecordModel

/// Which database a dialect writes for, for the few scripts that still choose by it.
package enum SQLDialectKind: Sendable, Equatable {
    case sqlite
    case postgres
}

/// What differs between SQLite's SQL and PostgreSQL's in the statements the engine writes.
/// Scripts write `?` placeholders and standard SQL (`ON CONFLICT … DO UPDATE`, `RETURNING`);
/// the few clauses that differ come from the backend's dialect (`SQLiteDialect`, `PostgresDialect`).
package protocol SQLDialect: Sendable {
    var kind: SQLDialectKind { get }

    /// `sql` with its `?` placeholders written as the database expects them.
    func placeholders(_ sql: String) -> String

    /// The clause that locks the rows a `SELECT` read until the transaction ends (empty where
    /// the one writer already holds the whole database).
    var forUpdate: String { get }

    /// `forUpdate` naming the tables of a join whose rows it locks (`FOR UPDATE OF d, z`).
    func forUpdate(of tables: String...) -> String

    /// How a notification's payload, a record's fields and a subscription's definition (JSON) are stored.
    var payloadType: StoreColumnType { get }

    /// A statement that makes the transaction's writers of one key (a container's development
    /// schema) take turns until it ends; nil where the one writer already takes turns. Binds the
    /// key to its one `?`.
    func transactionLock(namespace: Int32) -> String?

    /// Whether notification ids are numbered per database (`databases.note_seq`: any daemon may
    /// add one) rather than by the table's own row id (one writer).
    var numbersNotificationsPerDatabase: Bool { get }

    /// A condition that `column` is one of the strings of a JSON array bound to a single `?`
    /// (`JSONArgument.array`): one statement however many names, and one cached plan.
    func isInJSONArray(_ column: String) -> String

    /// A table `alias` of the strings of a JSON array bound to one `?` (`JSONArgument.array`):
    /// columns `value` and `position` (increasing in the array's order), a row for each element,
    /// repeated ones included.
    func jsonArrayElements(as alias: String) -> String

    /// `FROM` the strings of a JSON array bound to the first `?` (table `asked`, as
    /// `jsonArrayElements`) joined to their `records` rows in the zone bound to the second `?`
    /// (table `r`; `left`: a name without a row still gives a row, `r`'s columns NULL), each name
    /// one probe of the records' primary key (`liveOnly`: tombstones count as absent).
    func recordsNamed(left: Bool, liveOnly: Bool) -> String

    /// A condition that the pair of columns `(first, second)` is one of the pairs of a JSON array
    /// of two-string arrays bound to a single `?` (`JSONArgument.pairs`): a batch of assets
    /// named by scope and checksum in one statement that still uses the pair's index.
    func isPairInJSONArray(_ first: String, _ second: String) -> String

    /// A statement that makes the rest of the transaction the only one holding `key` across every
    /// process on the database; nil where one writer already excludes all others.
    func exclusiveLock(_ key: Int64) -> String?

    /// The database's own check of its file, answering one row `ok` when sound; nil where the
    /// server keeps its files itself.
    var fileCheck: String? { get }

    /// `column` compared in byte order.
    func inByteOrder(_ column: String) -> String

    /// A byte-order column (`query_index.record_name`) compared with a record's name in the
    /// records' own collation, so the join uses the records' primary key.
    func inRecordNameOrder(_ column: String) -> String
}

extension SQLDialect {
    /// How a record's fields JSON is stored: as a notification's payload.
    package var fieldsType: StoreColumnType { payloadType }

    /// JSON bytes as the column of type `payloadType`/`fieldsType` takes them.
    package func jsonValue(_ bytes: [UInt8]) -> SQLValue {
        payloadType == .text ? .text(String(decoding: bytes, as: UTF8.self)) : .blob(bytes)
    }

    /// A JSON document (a subscription's definition) as its column stores it: the same type as a
    /// notification's payload.
    package func jsonDocument(_ bytes: [UInt8]) -> SQLValue { jsonValue(bytes) }

    /// `ON CONFLICT (key) DO UPDATE SET c = excluded.c, …`: the same text on both, here so a
    /// script names only the key and the columns it replaces.
    package func upsert(conflict key: [String], update columns: [String]) -> String {
        let target = "ON CONFLICT (\(key.joined(separator: ", ")))"
        guard !columns.isEmpty else { return target + " DO NOTHING" }
        return target + " DO UPDATE SET " + columns.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
    }
}

/// The JSON text bound to the one `?` of a dialect's JSON-array conditions.
package enum JSONArgument {
    /// The JSON array of `names`, for `isInJSONArray` and `jsonArrayElements`.
    package static func array(_ names: [String]) -> String {
        JSONValue.array(names.map { .string($0) }).serializedString()
    }

    /// The JSON array of two-string arrays, for `isPairInJSONArray`.
    package static func pairs(_ pairs: [(String, String)]) -> String {
        JSONValue.array(pairs.map { .array([.string($0.0), .string($0.1)]) }).serializedString()
    }
}
