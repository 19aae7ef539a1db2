/// The tables of the PostgreSQL store: the SQLite store's (StoreSchema), with PostgreSQL's types,
/// plus `databases.note_seq`, the per-database notification sequence taken under the database's
/// row lock (a global sequence could hand a long-poll cursor 7 before 6 commits).
enum PostgresSchema {
    static let version = 1

    static let statements = [
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS users (
            id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE, record_name TEXT NOT NULL UNIQUE, created_at BIGINT NOT NULL)
        """,
        """
        CREATE TABLE IF NOT EXISTS auth_tokens (
            token_hash TEXT PRIMARY KEY, user_id BIGINT NOT NULL, created_at BIGINT NOT NULL, revoked BIGINT NOT NULL DEFAULT 0)
        """,
        "CREATE TABLE IF NOT EXISTS api_tokens (token_hash TEXT PRIMARY KEY, created_at BIGINT NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS databases (
            id BIGSERIAL PRIMARY KEY, user_id BIGINT NOT NULL, container TEXT NOT NULL, environment TEXT NOT NULL,
            db_seq BIGINT NOT NULL DEFAULT 0, purged_seq BIGINT NOT NULL DEFAULT 0, note_seq BIGINT NOT NULL DEFAULT 0,
            UNIQUE (user_id, container, environment))
        """,
        """
        CREATE TABLE IF NOT EXISTS zones (
            id BIGSERIAL PRIMARY KEY, database_id BIGINT NOT NULL, name TEXT NOT NULL,
            seq BIGINT NOT NULL DEFAULT 0, db_seq BIGINT NOT NULL DEFAULT 0, purged_seq BIGINT NOT NULL DEFAULT 0,
            deleted BIGINT NOT NULL DEFAULT 0, deleted_at BIGINT)
        """,
        "CREATE UNIQUE INDEX IF NOT EXISTS zones_live_name ON zones (database_id, name) WHERE deleted = 0",
        "CREATE INDEX IF NOT EXISTS zones_db_seq ON zones (database_id, db_seq)",
        """
        CREATE TABLE IF NOT EXISTS records (
            zone_id BIGINT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, tag TEXT NOT NULL,
            seq BIGINT NOT NULL, deleted BIGINT NOT NULL DEFAULT 0, fields TEXT NOT NULL, parent TEXT,
            created_at BIGINT NOT NULL, created_by TEXT NOT NULL, created_device TEXT,
            modified_at BIGINT NOT NULL, modified_by TEXT NOT NULL, modified_device TEXT,
            PRIMARY KEY (zone_id, name))
        """,
        "CREATE UNIQUE INDEX IF NOT EXISTS records_seq ON records (zone_id, seq)",
        "CREATE INDEX IF NOT EXISTS records_type ON records (zone_id, type) WHERE deleted = 0",
        """
        CREATE TABLE IF NOT EXISTS refs (
            zone_id BIGINT NOT NULL, target TEXT NOT NULL, source TEXT NOT NULL, action BIGINT NOT NULL,
            PRIMARY KEY (zone_id, target, source, action))
        """,
        "CREATE INDEX IF NOT EXISTS refs_source ON refs (zone_id, source)",
        """
        CREATE TABLE IF NOT EXISTS dev_schema (
            container TEXT NOT NULL, record_type TEXT NOT NULL, field TEXT NOT NULL, field_type TEXT NOT NULL,
            PRIMARY KEY (container, record_type, field))
        """,
        """
        CREATE TABLE IF NOT EXISTS subscriptions (
            database_id BIGINT NOT NULL, subscription_id TEXT NOT NULL, definition TEXT NOT NULL, PRIMARY KEY (database_id, subscription_id))
        """,
        """
        CREATE TABLE IF NOT EXISTS push_tokens (
            token TEXT PRIMARY KEY, database_id BIGINT NOT NULL, user_id BIGINT NOT NULL, apns_environment TEXT NOT NULL,
            start_cursor BIGINT NOT NULL, created_at BIGINT NOT NULL)
        """,
        // `id` is the database's notification sequence (databases.note_seq), the delivery cursor.
        """
        CREATE TABLE IF NOT EXISTS notifications (
            database_id BIGINT NOT NULL, id BIGINT NOT NULL, created_at BIGINT NOT NULL, payload TEXT NOT NULL,
            PRIMARY KEY (database_id, id))
        """,
        "CREATE INDEX IF NOT EXISTS notifications_created ON notifications (created_at)",
        // Daemons serving the database, by heartbeat: per-user rate limits are shared among them.
        "CREATE TABLE IF NOT EXISTS daemons (id TEXT PRIMARY KEY, last_seen BIGINT NOT NULL)",
        // Sharing: users found by email (CONTRACT §3.9).
        "ALTER TABLE users ADD COLUMN IF NOT EXISTS email TEXT",
        "CREATE UNIQUE INDEX IF NOT EXISTS users_email ON users (email) WHERE email IS NOT NULL",
        // A zone's share and its participants (see StoreSchema).
        "CREATE TABLE IF NOT EXISTS shares (zone_id BIGINT PRIMARY KEY, short_guid TEXT NOT NULL UNIQUE, owner_user_id BIGINT NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS share_participants (
            zone_id BIGINT NOT NULL, participant_id TEXT NOT NULL, user_id BIGINT, email TEXT, permission TEXT NOT NULL,
            status TEXT NOT NULL, database_id BIGINT, PRIMARY KEY (zone_id, participant_id))
        """,
        "CREATE INDEX IF NOT EXISTS share_participants_user ON share_participants (user_id, zone_id)",
        "CREATE INDEX IF NOT EXISTS share_participants_email ON share_participants (email) WHERE email IS NOT NULL",
    ]
}
