/// How long a courier URL lives unused, and how often a use is written down (not on every poll).
package enum CourierRules {
    package static let unusedLifetimeMillis: Int64 = 30 * 24 * 3600 * 1000
    package static let useRecordingMillis: Int64 = 3600 * 1000

    /// SQL on a channel `p`: the token that made it is neither revoked nor expired (unbound: its user
    /// has a token not revoked) and it was used after the cutoff. Its arguments: now, then the cutoff (ms).
    package static let liveCondition = """
        CASE WHEN p.auth_token_hash IS NULL
             THEN EXISTS (SELECT 1 FROM auth_tokens a WHERE a.user_id = p.user_id AND a.revoked = 0)
             ELSE EXISTS (SELECT 1 FROM auth_tokens a WHERE a.token_hash = p.auth_token_hash AND a.user_id = p.user_id
                          AND a.revoked = 0 AND (a.expires_at IS NULL OR a.expires_at > ?)) END
        AND COALESCE(p.last_used_at, p.created_at) > ?
        """
}
