import Logging
import PostgresNIO
import RecordModel
import RecordStore

extension PostgresBackend {
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
            if step.backfillsQueryIndex {
                try await StoreEngine.backfillQueryIndex(PostgresStoreConnection(connection: connection, logger: logger))
            }
        }
        if !steps.isEmpty {
            try await connection.query(
                """
                INSERT INTO meta (key, value) VALUES ('schema_version', \(String(StoreMigration.latestVersion)))
                ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value
                """, logger: logger)
        }
    }

    /// Copies an exported SQLite store into this (empty) database in one transaction, keeping
    /// every id, sequence, token hash and the store's identity, so clients' sync tokens, change
    /// tags and notification cursors stay valid after the switch. The daemons must be started
    /// after it (a running one would keep the identity it read at start).
    package func importTables(_ tables: [ExportedTable], storeID: String) async throws {
        try await write { connection in
            try await connection.query("LOCK TABLE users, databases IN EXCLUSIVE MODE", logger: self.logger)
            let used = try await connection.query("SELECT (SELECT COUNT(*) FROM users) + (SELECT COUNT(*) FROM databases)",
                                                  logger: self.logger).collect().first?.decode(Int64.self) ?? 0
            guard used == 0 else { throw MigrationRefused(description: "the PostgreSQL database already holds a store with users; migrate needs an empty one") }
            let rows = PostgresStoreConnection(connection: connection, logger: self.logger)
            // A bounded statement per slice of a table, however large the store.
            for table in tables {
                let values = table.values
                for start in stride(from: 0, to: values.count, by: 10_000) {
                    try await rows.insertRows(into: table.name, columns: table.columns, rows: Array(values[start..<min(start + 10_000, values.count)]))
                }
            }
            // The notification cursors continue where SQLite's ids ended, per database.
            try await connection.query(
                "UPDATE databases d SET note_seq = COALESCE((SELECT MAX(id) FROM notifications n WHERE n.database_id = d.id), 0)",
                logger: self.logger)
            for sequence in ["users", "databases", "zones"] {
                try await connection.query(PostgresQuery(unsafeSQL:
                    "SELECT setval(pg_get_serial_sequence('\(sequence)', 'id'), GREATEST((SELECT MAX(id) FROM \(sequence)), 1))"), logger: self.logger)
            }
            try await connection.query("UPDATE meta SET value = \(storeID) WHERE key = 'store_id'", logger: self.logger)
        }
    }
}
