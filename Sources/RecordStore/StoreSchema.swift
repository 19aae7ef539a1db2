/// The server store's schema, as numbered migrations applied in order when a store opens, each
/// with its SQLite and its PostgreSQL DDL side by side. `meta.schema_version` holds the version a
/// store is at (stores made before this list existed hold 1). A store newer than the binary is
/// refused. Never edit a released step: add one.
package struct StoreMigration: Sendable {
    package var version: Int
    package var sqlite: [String]
    package var postgres: [String]
    /// Whether the step fills the query index from the records already stored.
    package var backfillsQueryIndex = false

    package static let all: [StoreMigration] = [
        StoreMigration(version: 1, sqlite: StoreSchema.version1, postgres: StoreSchema.postgresVersion1),
        // The query index (QueryIndex): records/query reads index ranges instead of whole types.
        StoreMigration(
            version: 2,
            sqlite: [
                """
                CREATE TABLE query_index (
                    zone_id INTEGER NOT NULL, record_type TEXT NOT NULL, field TEXT NOT NULL, sort_key TEXT NOT NULL,
                    record_name TEXT NOT NULL, PRIMARY KEY (zone_id, record_type, field, sort_key, record_name)) WITHOUT ROWID
                """,
                "CREATE INDEX query_index_record ON query_index (zone_id, record_name, field)",
                """
                CREATE TABLE query_counts (
                    zone_id INTEGER NOT NULL, record_type TEXT NOT NULL, field TEXT NOT NULL, entries INTEGER NOT NULL,
                    PRIMARY KEY (zone_id, record_type, field)) WITHOUT ROWID
                """,
            ],
            postgres: [
                // "C" collation: byte order, as SQLite compares and as the index keys are built.
                """
                CREATE TABLE query_index (
                    zone_id BIGINT NOT NULL, record_type TEXT NOT NULL, field TEXT NOT NULL, sort_key TEXT COLLATE "C" NOT NULL,
                    record_name TEXT COLLATE "C" NOT NULL, PRIMARY KEY (zone_id, record_type, field, sort_key, record_name))
                """,
                "CREATE INDEX query_index_record ON query_index (zone_id, record_name, field)",
                """
                CREATE TABLE query_counts (
                    zone_id BIGINT NOT NULL, record_type TEXT NOT NULL, field TEXT NOT NULL, entries BIGINT NOT NULL,
                    PRIMARY KEY (zone_id, record_type, field))
                """,
                // Records of a type by name in byte order (SQLite's records_type already carries the name).
                "CREATE INDEX records_type_name ON records (zone_id, type, name COLLATE \"C\") WHERE deleted = 0",
                "DROP INDEX IF EXISTS records_type",
            ],
            backfillsQueryIndex: true),
        // Sharing: users found by email; a zone's share, and its participants in a
        // table of their own so every shared-database request checks access with one indexed lookup
        // in its transaction. `share_participants.email` is the address a participant was invited
        // by (matched against `users.email`); `database_id` is the participant's private database
        // once it accepted (its notification outbox).
        StoreMigration(
            version: 3,
            sqlite: [
                "ALTER TABLE users ADD COLUMN email TEXT",
                "CREATE UNIQUE INDEX users_email ON users (email) WHERE email IS NOT NULL",
                "CREATE TABLE shares (zone_id INTEGER PRIMARY KEY, short_guid TEXT NOT NULL UNIQUE, owner_user_id INTEGER NOT NULL)",
                """
                CREATE TABLE share_participants (
                    zone_id INTEGER NOT NULL, participant_id TEXT NOT NULL, user_id INTEGER, email TEXT, permission TEXT NOT NULL,
                    status TEXT NOT NULL, database_id INTEGER, PRIMARY KEY (zone_id, participant_id))
                """,
                "CREATE INDEX share_participants_user ON share_participants (user_id, zone_id)",
                "CREATE INDEX share_participants_email ON share_participants (email) WHERE email IS NOT NULL",
            ],
            postgres: [
                "ALTER TABLE users ADD COLUMN email TEXT",
                "CREATE UNIQUE INDEX users_email ON users (email) WHERE email IS NOT NULL",
                "CREATE TABLE shares (zone_id BIGINT PRIMARY KEY, short_guid TEXT NOT NULL UNIQUE, owner_user_id BIGINT NOT NULL)",
                """
                CREATE TABLE share_participants (
                    zone_id BIGINT NOT NULL, participant_id TEXT NOT NULL, user_id BIGINT, email TEXT, permission TEXT NOT NULL,
                    status TEXT NOT NULL, database_id BIGINT, PRIMARY KEY (zone_id, participant_id))
                """,
                "CREATE INDEX share_participants_user ON share_participants (user_id, zone_id)",
                "CREATE INDEX share_participants_email ON share_participants (email) WHERE email IS NOT NULL",
            ]),
        // Server-to-server keys (`scorebookd key add`): the P-256 public key (DER,
        // base64) and the user the key acts as.
        StoreMigration(
            version: 4,
            sqlite: [
                """
                CREATE TABLE server_keys (
                    key_id TEXT PRIMARY KEY, public_key TEXT NOT NULL, user_id INTEGER NOT NULL, name TEXT NOT NULL,
                    created_at INTEGER NOT NULL)
                """,
            ],
            postgres: [
                """
                CREATE TABLE server_keys (
                    key_id TEXT PRIMARY KEY, public_key TEXT NOT NULL, user_id BIGINT NOT NULL, name TEXT NOT NULL,
                    created_at BIGINT NOT NULL)
                """,
            ]),
        // Assets. `asset_uploads`: one row per upload URL (`upload_id` is its secret), bound
        // to a user, a content scope (`AssetScope.key`) and a zone/record/field (`AssetBinding.key`);
        // `claimed_at` spends the URL, the bytes' checksum and the receipt come with `uploaded_at`,
        // `attached_at` spends the receipt. `asset_blobs`: the bytes of one scope, stored once;
        // `unreferenced_since` is set by the sweep while no live record refers to them. SQLite keeps
        // the bytes in files beside the database; PostgreSQL in `asset_chunks`, so every daemon
        // serves every asset.
        StoreMigration(
            version: 5,
            sqlite: [
                """
                CREATE TABLE asset_uploads (
                    upload_id TEXT PRIMARY KEY, user_id INTEGER NOT NULL, scope TEXT NOT NULL, binding TEXT NOT NULL,
                    created_at INTEGER NOT NULL, claimed_at INTEGER, checksum TEXT, size INTEGER, receipt TEXT UNIQUE,
                    uploaded_at INTEGER, attached_at INTEGER)
                """,
                "CREATE INDEX asset_uploads_checksum ON asset_uploads (scope, checksum)",
                """
                CREATE TABLE asset_blobs (
                    scope TEXT NOT NULL, checksum TEXT NOT NULL, size INTEGER NOT NULL, created_at INTEGER NOT NULL,
                    attached INTEGER NOT NULL DEFAULT 0, unreferenced_since INTEGER, PRIMARY KEY (scope, checksum)) WITHOUT ROWID
                """,
            ],
            postgres: [
                """
                CREATE TABLE asset_uploads (
                    upload_id TEXT PRIMARY KEY, user_id BIGINT NOT NULL, scope TEXT NOT NULL, binding TEXT NOT NULL,
                    created_at BIGINT NOT NULL, claimed_at BIGINT, checksum TEXT, size BIGINT, receipt TEXT UNIQUE,
                    uploaded_at BIGINT, attached_at BIGINT)
                """,
                "CREATE INDEX asset_uploads_checksum ON asset_uploads (scope, checksum)",
                """
                CREATE TABLE asset_blobs (
                    scope TEXT NOT NULL, checksum TEXT NOT NULL, size BIGINT NOT NULL, created_at BIGINT NOT NULL,
                    attached INTEGER NOT NULL DEFAULT 0, unreferenced_since BIGINT, PRIMARY KEY (scope, checksum))
                """,
                "CREATE TABLE asset_chunks (scope TEXT NOT NULL, checksum TEXT NOT NULL, seq INTEGER NOT NULL, data BYTEA NOT NULL, PRIMARY KEY (scope, checksum, seq))",
                // Pictures do not compress: PostgreSQL would try (pglz) on every chunk for nothing.
                "ALTER TABLE asset_chunks ALTER COLUMN data SET STORAGE EXTERNAL",
            ]),
        // Fields are indexed from their first query (QueryIndex): `query_fields` lists a zone's
        // indexed fields. A store made before keeps indexing every field it already counts.
        StoreMigration(
            version: 6,
            sqlite: [
                """
                CREATE TABLE query_fields (
                    zone_id INTEGER NOT NULL, record_type TEXT NOT NULL, field TEXT NOT NULL,
                    PRIMARY KEY (zone_id, record_type, field)) WITHOUT ROWID
                """,
                "INSERT INTO query_fields (zone_id, record_type, field) SELECT zone_id, record_type, field FROM query_counts WHERE field != ''",
            ],
            postgres: [
                """
                CREATE TABLE query_fields (
                    zone_id BIGINT NOT NULL, record_type TEXT NOT NULL, field TEXT NOT NULL, PRIMARY KEY (zone_id, record_type, field))
                """,
                "INSERT INTO query_fields (zone_id, record_type, field) SELECT zone_id, record_type, field FROM query_counts WHERE field != ''",
            ]),
        // Tokens that expire (`user token --expires-in DAYS`) and when each was last used (written
        // at most once a minute per token, `TokenUseRecorder`), for `user list`.
        StoreMigration(
            version: 7,
            sqlite: ["ALTER TABLE auth_tokens ADD COLUMN expires_at INTEGER", "ALTER TABLE auth_tokens ADD COLUMN last_used_at INTEGER"],
            postgres: ["ALTER TABLE auth_tokens ADD COLUMN expires_at BIGINT", "ALTER TABLE auth_tokens ADD COLUMN last_used_at BIGINT"]),
        // Web sign-in passwords (`scorebookd user password`), as bcrypt hashes; NULL: none set.
        StoreMigration(version: 8, sqlite: ["ALTER TABLE users ADD COLUMN password_hash TEXT"],
                       postgres: ["ALTER TABLE users ADD COLUMN password_hash TEXT"]),
        // A courier URL lives with the user token that made it (NULL: made before, or by another
        // credential: while the user has a live token) and ends 30 days after its last use.
        StoreMigration(
            version: 9,
            sqlite: ["ALTER TABLE push_tokens ADD COLUMN auth_token_hash TEXT", "ALTER TABLE push_tokens ADD COLUMN last_used_at INTEGER"],
            postgres: ["ALTER TABLE push_tokens ADD COLUMN auth_token_hash TEXT", "ALTER TABLE push_tokens ADD COLUMN last_used_at BIGINT"]),
        // How far a courier's polls without a cursor (CloudKit JS's) were answered, one
        // notification at a time, so the next such poll, on any daemon and after a restart,
        // resumes there (NULL: none answered yet, start at `start_cursor`).
        StoreMigration(version: 10, sqlite: ["ALTER TABLE push_tokens ADD COLUMN delivered_cursor INTEGER"],
                       postgres: ["ALTER TABLE push_tokens ADD COLUMN delivered_cursor BIGINT"]),
        // Webhooks (server-side subscribers). `webhook_events` is their outbox, written in the
        // transaction of the change: one row per endpoint and event, delivered in id order per
        // endpoint and zone (`stream`, the zone's row id). A row is leased (`lease_owner`,
        // `lease_until`) by the daemon delivering it, so daemons sharing a database never send one
        // event at once; `delivered_at` NULL: still to deliver. `webhook_attempts`: recent tries.
        // Only the undelivered rows are indexed beyond their id: every change writes a row per
        // endpoint, and `replay` and the hourly purge may scan.
        StoreMigration(
            version: 11,
            sqlite: [
                """
                CREATE TABLE webhooks (
                    id TEXT PRIMARY KEY, url TEXT NOT NULL, secret TEXT NOT NULL, owner_user_id INTEGER, container TEXT,
                    environment TEXT, database_kind TEXT, zone TEXT, record_type TEXT, events TEXT NOT NULL, fields TEXT NOT NULL,
                    enabled INTEGER NOT NULL DEFAULT 1, disabled_reason TEXT, created_at INTEGER NOT NULL)
                """,
                """
                CREATE TABLE webhook_events (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, webhook_id TEXT NOT NULL, event_id TEXT NOT NULL, stream INTEGER NOT NULL,
                    zone_seq INTEGER NOT NULL, created_at INTEGER NOT NULL, payload BLOB NOT NULL, delivered_at INTEGER,
                    attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER NOT NULL DEFAULT 0, first_failed_at INTEGER,
                    lease_owner TEXT, lease_until INTEGER NOT NULL DEFAULT 0)
                """,
                "CREATE INDEX webhook_events_pending ON webhook_events (webhook_id, stream, id) WHERE delivered_at IS NULL",
                """
                CREATE TABLE webhook_attempts (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, webhook_id TEXT NOT NULL, event_id TEXT NOT NULL, attempted_at INTEGER NOT NULL,
                    status INTEGER NOT NULL, latency_ms INTEGER NOT NULL, error TEXT)
                """,
                "CREATE INDEX webhook_attempts_webhook ON webhook_attempts (webhook_id, id)",
            ],
            postgres: [
                """
                CREATE TABLE webhooks (
                    id TEXT PRIMARY KEY, url TEXT NOT NULL, secret TEXT NOT NULL, owner_user_id BIGINT, container TEXT,
                    environment TEXT, database_kind TEXT, zone TEXT, record_type TEXT, events TEXT NOT NULL, fields TEXT NOT NULL,
                    enabled INTEGER NOT NULL DEFAULT 1, disabled_reason TEXT, created_at BIGINT NOT NULL)
                """,
                """
                CREATE TABLE webhook_events (
                    id BIGSERIAL PRIMARY KEY, webhook_id TEXT NOT NULL, event_id TEXT NOT NULL, stream BIGINT NOT NULL,
                    zone_seq BIGINT NOT NULL, created_at BIGINT NOT NULL, payload TEXT NOT NULL, delivered_at BIGINT,
                    attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at BIGINT NOT NULL DEFAULT 0, first_failed_at BIGINT,
                    lease_owner TEXT, lease_until BIGINT NOT NULL DEFAULT 0)
                """,
                "CREATE INDEX webhook_events_pending ON webhook_events (webhook_id, stream, id) WHERE delivered_at IS NULL",
                """
                CREATE TABLE webhook_attempts (
                    id BIGSERIAL PRIMARY KEY, webhook_id TEXT NOT NULL, event_id TEXT NOT NULL, attempted_at BIGINT NOT NULL,
                    status INTEGER NOT NULL, latency_ms BIGINT NOT NULL, error TEXT)
                """,
                "CREATE INDEX webhook_attempts_webhook ON webhook_attempts (webhook_id, id)",
            ]),
        // Webhooks read their events from the zones' change history instead of a row per endpoint
        // and change: `webhook_streams` holds each endpoint's position in each zone (and its retry
        // and lease), `webhook_backlog` the changes the records table no longer holds (a state a
        // later change replaced, a deleted zone's last changes and its `zone.deleted`) while an
        // enabled endpoint still lacks them. Each stream starts where its oldest undelivered event was.
        StoreMigration(version: 12, sqlite: webhookStreams(integer: "INTEGER", fields: "BLOB"),
                       postgres: webhookStreams(integer: "BIGINT", fields: "TEXT")),
    ]

    private static func webhookStreams(integer: String, fields: String) -> [String] {
        [
            """
            CREATE TABLE webhook_streams (
                webhook_id TEXT NOT NULL, zone_id \(integer) NOT NULL, delivered_seq \(integer) NOT NULL,
                attempts \(integer) NOT NULL DEFAULT 0, next_attempt_at \(integer) NOT NULL DEFAULT 0, first_failed_at \(integer),
                lease_owner TEXT, lease_until \(integer) NOT NULL DEFAULT 0, PRIMARY KEY (webhook_id, zone_id))
            """,
            "CREATE INDEX webhook_streams_zone ON webhook_streams (zone_id)",
            """
            CREATE TABLE webhook_backlog (
                zone_id \(integer) NOT NULL, seq \(integer) NOT NULL, kind \(integer) NOT NULL, record_name TEXT, record_type TEXT, tag TEXT,
                fields \(fields), created_at \(integer) NOT NULL, zone_shared \(integer) NOT NULL DEFAULT 0, PRIMARY KEY (zone_id, seq))
            """,
            """
            INSERT INTO webhook_streams (webhook_id, zone_id, delivered_seq)
            SELECT w.id, z.id, COALESCE((SELECT MIN(e.zone_seq) - 1 FROM webhook_events e
                WHERE e.webhook_id = w.id AND e.stream = z.id AND e.delivered_at IS NULL), z.seq)
            FROM webhooks w CROSS JOIN zones z WHERE z.deleted = 0
            """,
            "DROP TABLE webhook_events",
        ]
    }

    package static var latestVersion: Int { all.last!.version }

    /// The steps a store at `version` still needs; throws for a store newer than this binary.
    package static func pending(from version: Int) throws -> [StoreMigration] {
        guard version <= latestVersion else {
            throw StoreOpenError("the store's schema is version \(version), newer than this scorebookd understands (\(latestVersion)); run a newer scorebookd")
        }
        return all.filter { $0.version > version }
    }
}

/// The tables of the server's store. SQL is kept to what PostgreSQL also accepts where that costs
/// nothing (no SQLite-only column types; `WITHOUT ROWID` is the one SQLite-specific choice, for
/// the two hot tables keyed by (zone, name)).
package enum StoreSchema {
    /// Migration 1 on SQLite: the schema before migrations were numbered.
    package static let version1 = [
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
    ]

    /// The records table and its indexes; visible to the package so the benchmark's raw-SQLite baseline inserts
    /// into exactly the same table (`scorebook-bench storage-limit`).
    package static let recordsTable = [
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

    /// Migration 1 on PostgreSQL: SQLite's tables with PostgreSQL's types, plus `databases.note_seq`,
    /// the per-database notification sequence taken under the database's row lock (a global
    /// sequence could hand a long-poll cursor 7 before 6 commits), and `daemons`.
    package static let postgresVersion1 = [
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
    ]
}
