import RecordModel

/// The notifications a write's changes fire, written in the write's own transaction: a committed
/// change always notifies and a rolled-back one never does.
extension StoreEngine {
    /// Matches the changes of one transaction against the database's subscriptions and writes the
    /// notifications they fire. `zoneChanged` marks a zone created or deleted (database
    /// subscriptions fire even when no record changed). Returns the other databases that received
    /// notifications (public-database subscribers).
    @discardableResult
    package func recordNotifications(for changes: [CommittedChange], zone zoneName: String, databaseID: Int64, scope: DatabaseScope,
                             zoneChanged: Bool, _ connection: any StoreConnection) async throws -> Set<Int64>
    {
        guard !changes.isEmpty || zoneChanged else { return [] }
        let subscriptions = try await subscriptions(databaseID, connection)
        let (payloads, firedOnce) = SubscriptionRules.fire(subscriptions, changes: changes, zone: zoneName, scope: scope, zoneChanged: zoneChanged)
        let byRecipient = Dictionary(grouping: payloads, by: { $0.recipient ?? databaseID })
        for target in byRecipient.keys.sorted() {
            try await writeNotifications(byRecipient[target]!.map(\.payload), databaseID: target, connection)
            if target != databaseID { try await driver.announceCommit(of: target, connection) }
        }
        if !firedOnce.isEmpty {
            try await connection.execute("DELETE FROM subscriptions WHERE database_id = ? AND " + connection.dialect.isInJSONArray("subscription_id"),
                                         [.int(databaseID), .text(JSONArgument.array(firedOnce))])
            subscriptionCache?.invalidate(databaseID)
        }
        return Set(byRecipient.keys).subtracting([databaseID])
    }

    /// The database's subscriptions, from the cache where there is one.
    func subscriptions(_ databaseID: Int64, _ connection: any StoreConnection) async throws -> [Subscription] {
        if let cached = subscriptionCache?.cached(databaseID) { return cached }
        let loaded = try await connection.rows("SELECT definition FROM subscriptions WHERE database_id = ? ORDER BY subscription_id",
                                               [.int(databaseID)]).map { try Subscription(json: try JSONValue.parse($0.blob(0))) }
        subscriptionCache?.keep(loaded, for: databaseID)
        return loaded
    }

    /// Appends `payloads` to the database's notifications in one statement.
    func writeNotifications(_ payloads: [[UInt8]], databaseID: Int64, _ connection: any StoreConnection) async throws {
        guard !payloads.isEmpty else { return }
        let now = clock()
        let dialect = connection.dialect
        let payloadValues = payloads.map(dialect.jsonValue)
        var columns = [StoreColumn("database_id", .integer), StoreColumn("created_at", .integer), StoreColumn("payload", dialect.payloadType)]
        var rows = payloadValues.map { [SQLValue.int(databaseID), .int(now), $0] }
        if dialect.numbersNotificationsPerDatabase {
            let count = Int64(payloads.count)
            let last = try await connection.scalarInt("UPDATE databases SET note_seq = note_seq + ? WHERE id = ? RETURNING note_seq",
                                                      [.int(count), .int(databaseID)]) ?? count
            columns.append(StoreColumn("id", .integer))
            for index in rows.indices { rows[index].append(.int(last - count + 1 + Int64(index))) }
        }
        try await connection.insertRows(into: "notifications", columns: columns, rows: rows)
    }

    /// The database's notifications after `cursor`, oldest first, at most `limit`: what the push
    /// hub and the couriers deliver. One statement, so no transaction around it.
    package func notifications(databaseID: Int64, after cursor: Int64, limit: Int) async throws -> [StoredNotification] {
        try await driver.readStatement { connection in
            try await connection.rows("SELECT id, payload FROM notifications WHERE database_id = ? AND id > ? ORDER BY id LIMIT ?",
                                      [.int(databaseID), .int(cursor), .int(Int64(limit))])
                .map { StoredNotification(id: $0.int(0), payload: $0.blob(1)) }
        }
    }
}
