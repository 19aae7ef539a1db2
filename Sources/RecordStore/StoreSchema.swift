/// The tables of the server's store. SQL is kept to what PostgreSQL also accepts where that costs
/// nothing (no SQLite-only column types; `WITHOUT ROWID` is the one SQLite-specific choice, for
/// the two hot tables keyed by (zone, name)).
public enum StoreSchema {
    static let version = 1

    static let statements = [
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS users (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, record_name TEXT NOT NULL UNIQUE,
            created_at INTEGER NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS auth_tokens (
            token_hash TEXT PRIMARY KEY, user_id INTEGER NOT NULL, created_at INTEGER NOT NULL,
            revoked INTEGER NOT NULL DEFAULT 0)
        """,
        "CREATE TABLE IF NOT EXISTS api_tokens (token_hash TEXT PRIMARY KEY, created_at INTEGER NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS databases (
            id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, container TEXT NOT NULL, environment TEXT NOT NULL,
            db_seq INTEGER NOT NULL DEFAULT 0, purged_seq INTEGER NOT NULL DEFAULT 0,
            UNIQUE (user_id, container, environment))
        """,
        // A deleted zone stays as a row (deleted = 1) so `changes/database` can report it.
        """
        CREATE TABLE IF NOT EXISTS zones (
            id INTEGER PRIMARY KEY, database_id INTEGER NOT NULL, name TEXT NOT NULL,
            seq INTEGER NOT NULL DEFAULT 0, db_seq INTEGER NOT NULL DEFAULT 0, purged_seq INTEGER NOT NULL DEFAULT 0,
            deleted INTEGER NOT NULL DEFAULT 0, deleted_at INTEGER)
        """,
        "CREATE UNIQUE INDEX IF NOT EXISTS zones_live_name ON zones (database_id, name) WHERE deleted = 0",
        "CREATE INDEX IF NOT EXISTS zones_db_seq ON zones (database_id, db_seq)",
    ] + recordsTable + [
        // Live references between records, for DELETE_SELF cascades and VALIDATE checks.
        """
        CREATE TABLE IF NOT EXISTS refs (
            zone_id INTEGER NOT NULL, target TEXT NOT NULL, source TEXT NOT NULL, action INTEGER NOT NULL,
            PRIMARY KEY (zone_id, target, source, action)) WITHOUT ROWID
        """,
        "CREATE INDEX IF NOT EXISTS refs_source ON refs (zone_id, source)",
        // Record types and fields added just in time in the development environment.
        """
        CREATE TABLE IF NOT EXISTS dev_schema (
            container TEXT NOT NULL, record_type TEXT NOT NULL, field TEXT NOT NULL, field_type TEXT NOT NULL,
            PRIMARY KEY (container, record_type, field))
        """,
        "CREATE TABLE IF NOT EXISTS subscriptions (database_id INTEGER NOT NULL, subscription_id TEXT NOT NULL, definition BLOB NOT NULL, PRIMARY KEY (database_id, subscription_id))",
        // A device's delivery channel; `start_cursor` is where a poll without `since` begins.
        """
        CREATE TABLE IF NOT EXISTS push_tokens (
            token TEXT PRIMARY KEY, database_id INTEGER NOT NULL, user_id INTEGER NOT NULL, apns_environment TEXT NOT NULL,
            start_cursor INTEGER NOT NULL, created_at INTEGER NOT NULL)
        """,
        // The notification outbox, written in the transaction of the change that fires it. The
        // id is the delivery cursor: AUTOINCREMENT never reuses one, and the single writer assigns
        // them in commit order.
        """
        CREATE TABLE IF NOT EXISTS notifications (
            id INTEGER PRIMARY KEY AUTOINCREMENT, database_id INTEGER NOT NULL, created_at INTEGER NOT NULL, payload BLOB NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS notifications_database ON notifications (database_id, id)",
        // Sharing (CONTRACT §3.9): a zone's share, and its participants in a table of their own so
        // every shared-database request checks access with one indexed lookup in its transaction.
        // `email` is the address a participant was invited by (matched against `users.email`);
        // `database_id` is the participant's private database once it accepted (its outbox).
        "CREATE TABLE IF NOT EXISTS shares (zone_id INTEGER PRIMARY KEY, short_guid TEXT NOT NULL UNIQUE, owner_user_id INTEGER NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS share_participants (
            zone_id INTEGER NOT NULL, participant_id TEXT NOT NULL, user_id INTEGER, email TEXT, permission TEXT NOT NULL,
            status TEXT NOT NULL, database_id INTEGER, PRIMARY KEY (zone_id, participant_id))
        """,
        "CREATE INDEX IF NOT EXISTS share_participants_user ON share_participants (user_id, zone_id)",
        "CREATE INDEX IF NOT EXISTS share_participants_email ON share_participants (email) WHERE email IS NOT NULL",
    ]

    /// Columns added after version 1 shipped: (table, column, definition), added when missing.
    static let addedColumns = [("users", "email", "TEXT")]
    static let afterColumns = ["CREATE UNIQUE INDEX IF NOT EXISTS users_email ON users (email) WHERE email IS NOT NULL"]

    /// The records table and its indexes; public so the benchmark's raw-SQLite baseline inserts
    /// into exactly the same table (`scorebook-bench storage-limit`).
    public static let recordsTable = [
        // One row per record name; a deleted record is a tombstone row (deleted = 1) until purged.
        // `seq` is the zone's change sequence of the record's latest change.
        """
        CREATE TABLE IF NOT EXISTS records (
            zone_id INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, tag TEXT NOT NULL,
            seq INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0, fields BLOB NOT NULL, parent TEXT,
            created_at INTEGER NOT NULL, created_by TEXT NOT NULL, created_device TEXT,
            modified_at INTEGER NOT NULL, modified_by TEXT NOT NULL, modified_device TEXT,
            PRIMARY KEY (zone_id, name)) WITHOUT ROWID
        """,
        "CREATE UNIQUE INDEX IF NOT EXISTS records_seq ON records (zone_id, seq)",
        "CREATE INDEX IF NOT EXISTS records_type ON records (zone_id, type) WHERE deleted = 0",
    ]
}
