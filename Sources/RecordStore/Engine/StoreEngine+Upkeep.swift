import Foundation
import RecordModel

/// The store's upkeep: `scorebookd check`, the daemons' heartbeats, and the tables `migrate`
/// copies from one backend to the other.
extension StoreEngine {
    /// Checks the store's invariants in one snapshot; returns the problems found (empty when sound).
    /// A damaged file (the database's own check) stops it there: the queries after would only fail.
    package func checkIntegrity(bytes: any AssetByteStore) async throws -> [String] {
        try await driver.read { connection in
            if let fileCheck = connection.dialect.fileCheck {
                let verdict = try await connection.rows(fileCheck).map { $0.text(0) }
                if verdict != ["ok"] { return verdict.prefix(20).map { "\(connection.dialect.kind): \($0)" } }
            }
            var problems: [String] = []
            for check in IntegrityChecks.all {
                problems += try await connection.rows(check.sql, check.arguments).compactMap(check.problem)
            }
            return problems + (try await self.assetProblems(connection, bytes: bytes))
        }
    }

    /// How long a daemon counts as live after its last heartbeat.
    static let daemonLifetimeMilliseconds: Int64 = 15_000

    /// Records the daemon's heartbeat and counts the daemons heard from lately (at least this one).
    /// For a store that several daemons serve (PostgreSQL's `daemons` table).
    package func liveDaemonCount(heartbeatFrom daemonID: String) async throws -> Int {
        // Wall time, not the store's clock: heartbeats of several processes are compared.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let cutoff = now - Self.daemonLifetimeMilliseconds
        return try await driver.write { connection in
            try await connection.execute("INSERT INTO daemons (id, last_seen) VALUES (?, ?) " + connection.dialect.upsert(conflict: ["id"], update: ["last_seen"]),
                                         [.text(daemonID), .int(now)])
            try await connection.execute("DELETE FROM daemons WHERE last_seen < ?", [.int(cutoff - 60_000)])
            let count = try await connection.scalarInt("SELECT COUNT(*) FROM daemons WHERE last_seen >= ?", [.int(cutoff)]) ?? 1
            return max(1, Int(count))
        }
    }

    /// Every table `migrate` copies, read in one snapshot.
    package func exportTables() async throws -> [ExportedTable] {
        try await driver.read { connection in
            var tables: [ExportedTable] = []
            for table in ExportedTable.copied {
                let rows = try await connection.rows("SELECT \(table.columns.map(\.name).joined(separator: ", ")) FROM \(table.name)")
                tables.append(ExportedTable(name: table.name, columns: table.columns, rows: rows.map { row in
                    table.columns.indices.map { index -> ExportedValue in
                        if row.isNull(index) { return .null }
                        return table.columns[index].type == .integer ? .int(row.int(index)) : .text(row.text(index))
                    }
                }))
            }
            return tables
        }
    }
}

/// One value of an exported row: every column the store copies is an integer, text, or NULL
/// (JSON stored as bytes is exported as its UTF-8 text).
package enum ExportedValue: Sendable {
    case int(Int64)
    case text(String)
    case null

    var value: SQLValue {
        switch self {
        case .int(let number): return .int(number)
        case .text(let text): return .text(text)
        case .null: return .null
        }
    }
}

/// A table of the store, row by row, for `scorebookd migrate` (SQLite → PostgreSQL).
package struct ExportedTable: Sendable {
    package var name: String
    package var columns: [StoreColumn]
    package var rows: [[ExportedValue]]

    /// The rows as the driver inserts them.
    package var values: [[SQLValue]] { rows.map { $0.map(\.value) } }

    /// The tables `migrate` copies, with their columns in the order both schemas share: the
    /// assets' bookkeeping too (their bytes follow from the files).
    package static let copied: [(name: String, columns: [StoreColumn])] = [
        ("users", [int("id"), text("name"), text("record_name"), int("created_at"), text("email")]),
        ("auth_tokens", [text("token_hash"), int("user_id"), int("created_at"), int("revoked")]),
        ("api_tokens", [text("token_hash"), int("created_at")]),
        ("server_keys", [text("key_id"), text("public_key"), int("user_id"), text("name"), int("created_at")]),
        ("databases", [int("id"), int("user_id"), text("container"), text("environment"), int("db_seq"), int("purged_seq")]),
        ("zones", [int("id"), int("database_id"), text("name"), int("seq"), int("db_seq"), int("purged_seq"), int("deleted"), int("deleted_at")]),
        ("records", [int("zone_id"), text("name"), text("type"), text("tag"), int("seq"), int("deleted"), text("fields"), text("parent"),
                     int("created_at"), text("created_by"), text("created_device"), int("modified_at"), text("modified_by"),
                     text("modified_device")]),
        ("refs", [int("zone_id"), text("target"), text("source"), int("action")]),
        ("dev_schema", [text("container"), text("record_type"), text("field"), text("field_type")]),
        ("subscriptions", [int("database_id"), text("subscription_id"), text("definition")]),
        ("push_tokens", [text("token"), int("database_id"), int("user_id"), text("apns_environment"), int("start_cursor"), int("created_at")]),
        ("notifications", [int("database_id"), int("id"), int("created_at"), text("payload")]),
        ("shares", [int("zone_id"), text("short_guid"), int("owner_user_id")]),
        ("share_participants", [int("zone_id"), text("participant_id"), int("user_id"), text("email"), text("permission"), text("status"),
                                int("database_id")]),
        ("query_index", [int("zone_id"), text("record_type"), text("field"), text("sort_key"), text("record_name")]),
        ("query_counts", [int("zone_id"), text("record_type"), text("field"), int("entries")]),
        ("query_fields", [int("zone_id"), text("record_type"), text("field")]),
        ("asset_blobs", [text("scope"), text("checksum"), int("size"), int("created_at"), int("attached"), int("unreferenced_since")]),
        ("asset_uploads", [text("upload_id"), int("user_id"), text("scope"), text("binding"), int("created_at"), int("claimed_at"),
                           text("checksum"), int("size"), text("receipt"), int("uploaded_at"), int("attached_at")]),
        ("webhooks", [text("id"), text("url"), text("secret"), int("owner_user_id"), text("container"), text("environment"),
                      text("database_kind"), text("zone"), text("record_type"), text("events"), text("fields"), int("enabled"),
                      text("disabled_reason"), int("created_at")]),
        // Each endpoint goes on from its positions on PostgreSQL: the same events, in the same order, with the same ids.
        ("webhook_streams", [text("webhook_id"), int("zone_id"), int("delivered_seq"), int("attempts"), int("next_attempt_at"),
                             int("first_failed_at")]),
        ("webhook_backlog", [int("zone_id"), int("seq"), int("kind"), text("record_name"), text("record_type"), text("tag"), text("fields"),
                             int("created_at"), int("zone_shared")]),
    ]

    private static func int(_ name: String) -> StoreColumn { StoreColumn(name, .integer) }
    private static func text(_ name: String) -> StoreColumn { StoreColumn(name, .text) }
}

/// The invariants `scorebookd check` verifies, each a query whose rows are problems: references
/// point at live records, zones' sequences cover their records, and the query index holds live
/// records only with counts that match. Share records (`cloudkit.share`) are never indexed — a
/// share is found through its zone, never by a query — so the counts leave them out.
enum IntegrityChecks {
    struct Check: Sendable {
        var sql: String
        var arguments: [SQLValue] = []
        /// The problem a row reports (nil: the row is sound).
        var problem: @Sendable (StoreRow) -> String?
    }

    static let all: [Check] = [
        Check(sql: """
            SELECT r.zone_id, r.source, r.target FROM refs r
            LEFT JOIN records t ON t.zone_id = r.zone_id AND t.name = r.target AND t.deleted = 0
            WHERE t.name IS NULL LIMIT 20
            """) { "zone \($0.int(0)): '\($0.text(1))' references missing '\($0.text(2))'" },
        Check(sql: """
            SELECT r.zone_id, r.source FROM refs r
            LEFT JOIN records s ON s.zone_id = r.zone_id AND s.name = r.source AND s.deleted = 0
            WHERE s.name IS NULL LIMIT 20
            """) { "zone \($0.int(0)): reference index holds deleted source '\($0.text(1))'" },
        Check(sql: "SELECT z.id, z.seq, MAX(r.seq) FROM zones z JOIN records r ON r.zone_id = z.id GROUP BY z.id, z.seq HAVING MAX(r.seq) > z.seq") {
            "zone \($0.int(0)): sequence \($0.int(1)) is behind its records (\($0.int(2)))"
        },
        Check(sql: "SELECT COUNT(*) FROM records r LEFT JOIN zones z ON z.id = r.zone_id AND z.deleted = 0 WHERE z.id IS NULL") {
            $0.int(0) > 0 ? "\($0.int(0)) records belong to no live zone" : nil
        },
        Check(sql: """
            SELECT q.zone_id, q.record_name FROM query_index q LEFT JOIN records r
                ON r.zone_id = q.zone_id AND r.name = q.record_name AND r.type = q.record_type AND r.deleted = 0
            WHERE r.name IS NULL LIMIT 20
            """) { "zone \($0.int(0)): query index holds '\($0.text(1))', which is not live" },
        Check(sql: """
            SELECT r.zone_id, r.type, COUNT(*), COALESCE(MAX(c.entries), 0) FROM records r LEFT JOIN query_counts c
                ON c.zone_id = r.zone_id AND c.record_type = r.type AND c.field = ''
            WHERE r.deleted = 0 AND r.type != ? GROUP BY r.zone_id, r.type HAVING COUNT(*) != COALESCE(MAX(c.entries), 0) LIMIT 20
            """, arguments: [.text(ShareRules.recordType)]) {
            "zone \($0.int(0)): \($0.int(2)) live '\($0.text(1))' records, query counts say \($0.int(3))"
        },
        Check(sql: """
            SELECT q.zone_id, q.record_type, q.field, COUNT(*), COALESCE(MAX(c.entries), 0) FROM query_index q LEFT JOIN query_counts c
                ON c.zone_id = q.zone_id AND c.record_type = q.record_type AND c.field = q.field
            GROUP BY q.zone_id, q.record_type, q.field HAVING COUNT(*) != COALESCE(MAX(c.entries), 0) LIMIT 20
            """) { "zone \($0.int(0)): \($0.int(3)) query index entries for '\($0.text(1)).\($0.text(2))', counts say \($0.int(4))" },
    ]
}
