import RecordModel

/// The store's totals and its retention: tombstones and notifications older than their age go.
extension StoreEngine {
    package func statistics() async throws -> StoreStatistics {
        try await driver.readStatement { connection in
            let row = try await connection.first(
                """
                SELECT (SELECT COUNT(*) FROM records WHERE deleted = 0), (SELECT COUNT(*) FROM zones WHERE deleted = 0),
                    (SELECT COUNT(*) FROM notifications)
                """)
            return StoreStatistics(records: Int(row?.int(0) ?? 0), zones: Int(row?.int(1) ?? 0), notifications: Int(row?.int(2) ?? 0))
        }
    }

    /// Removes the tombstones and deleted zones older than `age`; returns how many tombstones went.
    /// Each zone (and database) remembers the newest sequence purged: a token older than that is
    /// expired, as it would miss the deletions.
    package func purgeTombstones(olderThanMilliseconds age: Int64) async throws -> Int {
        let at = clock() - age
        let cutoff: [SQLValue] = [.int(at), .int(at)]
        return try await driver.write { connection in
            try await connection.execute(
                """
                UPDATE zones SET purged_seq = (SELECT MAX(seq) FROM records r WHERE r.zone_id = zones.id AND r.deleted = 1
                    AND r.modified_at < ?) WHERE EXISTS (SELECT 1 FROM records r WHERE r.zone_id = zones.id AND r.deleted = 1
                    AND r.modified_at < ?)
                """, cutoff)
            let removed = try await connection.execute("DELETE FROM records WHERE deleted = 1 AND modified_at < ?", [cutoff[0]])
            try await connection.execute(
                """
                UPDATE databases SET purged_seq = (SELECT MAX(db_seq) FROM zones z WHERE z.database_id = databases.id
                    AND z.deleted = 1 AND z.deleted_at < ?) WHERE EXISTS (SELECT 1 FROM zones z
                    WHERE z.database_id = databases.id AND z.deleted = 1 AND z.deleted_at < ?)
                """, cutoff)
            try await connection.execute("DELETE FROM zones WHERE deleted = 1 AND deleted_at < ?", [cutoff[0]])
            return removed
        }
    }

    /// Removes the notifications older than `age`; returns how many went.
    package func purgeNotifications(olderThanMilliseconds age: Int64) async throws -> Int {
        let cutoff = clock() - age
        return try await driver.write { try await $0.execute("DELETE FROM notifications WHERE created_at < ?", [.int(cutoff)]) }
    }
}
