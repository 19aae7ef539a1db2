import RecordModel
import Synchronization

/// One line of `scorebookd user list`: who the user is, how many of its tokens still work, and
/// when one of them was last used (milliseconds since 1970; nil when never).
package struct UserSummary: Sendable, Equatable {
    package var user: User
    package var email: String?
    package var liveTokens: Int
    package var lastUsed: Int64?

    package init(user: User, email: String?, liveTokens: Int, lastUsed: Int64?) {
        self.user = user
        self.email = email
        self.liveTokens = liveTokens
        self.lastUsed = lastUsed
    }
}

/// What `scorebookd user delete` removed with the user.
package struct UserDeletion: Sendable, Equatable {
    package var user: User
    /// Zones of its private databases, gone with their records.
    package var zones: Int
    /// Zones it had shared: their participants lose them at their next sync.
    package var shares: Int

    package init(user: User, zones: Int, shares: Int) {
        self.user = user
        self.zones = zones
        self.shares = shares
    }
}

package enum TokenRules {
    /// The refusal of a token past its `--expires-in`.
    package static func expired() -> ServerError { ServerError(.authenticationFailed, "token expired") }

    /// `expiresAt` when the token has one and it is past at `now`.
    package static func isExpired(_ expiresAt: Int64?, now: Int64) -> Bool { expiresAt.map { $0 <= now } ?? false }

    /// A missing user, in the words every `user` command uses.
    package static func noSuchUser(_ name: String) -> ServerError { ServerError(.notFound, "no user named '\(name)'") }
}

/// Decides when a token's last use is written: at most once per `interval` per token, so a
/// request costs no write; `user list` is then at most that much behind.
package final class TokenUseRecorder: Sendable {
    package static let intervalMilliseconds: Int64 = 60_000
    private let written = Mutex<[String: Int64]>([:])

    package init() {}

    /// Whether the use at `now` of the token with this hash should be written now.
    package func shouldRecord(tokenHash: String, now: Int64) -> Bool {
        written.withLock { written in
            if let last = written[tokenHash], now - last < TokenUseRecorder.intervalMilliseconds { return false }
            if written.count > 100_000 { written.removeAll() }
            written[tokenHash] = now
            return true
        }
    }
}

/// `user list`'s query: its one argument is the time now.
enum UserListing {
    static let sql = """
        SELECT u.id, u.name, u.record_name, u.email,
            (SELECT COUNT(*) FROM auth_tokens t WHERE t.user_id = u.id AND t.revoked = 0 AND (t.expires_at IS NULL OR t.expires_at > ?)),
            (SELECT MAX(t.last_used_at) FROM auth_tokens t WHERE t.user_id = u.id)
        FROM users u ORDER BY u.name
        """
}

/// `user delete`'s statements; each one's single argument is the user's id. Zones go with
/// everything kept per zone, then databases with what is kept per database, then the user's own
/// rows. Asset bytes no live record refers to any more are left to the asset sweep.
enum UserRemoval {
    static let databases = "SELECT id FROM databases WHERE user_id = ?"
    static let zones = "SELECT id FROM zones WHERE database_id IN (\(databases))"

    static let liveZoneCount = "SELECT COUNT(*) FROM zones WHERE deleted = 0 AND name != '\(ZoneID.defaultZoneName)' AND database_id IN (\(databases))"
    static let shareCount = "SELECT COUNT(*) FROM shares WHERE owner_user_id = ?"

    static let statements: [String] =
        ["records", "refs", "query_index", "query_counts", "query_fields", "shares", "share_participants", "webhook_streams", "webhook_backlog"].map {
            "DELETE FROM \($0) WHERE zone_id IN (\(zones))"
        } + [
            "DELETE FROM zones WHERE database_id IN (\(databases))",
            "DELETE FROM subscriptions WHERE database_id IN (\(databases))",
            // The subscriptions of its shared database are kept under the negated id (`ShareRules.sharedSubscriptionKey`).
            "DELETE FROM subscriptions WHERE database_id IN (SELECT -id FROM databases WHERE user_id = ?)",
            "DELETE FROM notifications WHERE database_id IN (\(databases))",
            "DELETE FROM share_participants WHERE user_id = ?",
            "DELETE FROM databases WHERE user_id = ?",
            // The user's own webhook endpoints (`webhooks/modify`), with their positions and history.
            "DELETE FROM webhook_streams WHERE webhook_id IN (SELECT id FROM webhooks WHERE owner_user_id = ?)",
            "DELETE FROM webhook_attempts WHERE webhook_id IN (SELECT id FROM webhooks WHERE owner_user_id = ?)",
            "DELETE FROM webhooks WHERE owner_user_id = ?",
        ] + ["push_tokens", "auth_tokens", "server_keys", "asset_uploads"].map { "DELETE FROM \($0) WHERE user_id = ?" }
        + ["DELETE FROM users WHERE id = ?"]
}

/// A user and its web sign-in password hash (nil: no password set, so no sign-in).
package struct PasswordCredential: Sendable, Equatable {
    package var user: User
    package var hash: String?

    package init(user: User, hash: String?) {
        self.user = user
        self.hash = hash
    }

    /// The lookup by name, or else by email (kept in lower case): each of its
    /// `lookupArguments` arguments is what was typed.
    static let lookupSQL = """
        SELECT id, name, record_name, password_hash FROM users WHERE name = ? OR email = LOWER(?)
        ORDER BY CASE WHEN name = ? THEN 0 ELSE 1 END LIMIT 1
        """
    static let lookupArguments = 3
}
