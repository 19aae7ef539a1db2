import RecordModel
import Synchronization

/// `subscriptions/modify`, `subscriptions/list` and the notification channels (`tokens/create`,
/// the courier's lookup of a channel). A public-database subscription is stored under its
/// subscriber's private database id (`PublicSubscriptions`); a user's shared-database
/// subscriptions beside its private ones, under the negated id.
extension StoreEngine {
    package func modifySubscriptions(_ scope: DatabaseScope, operations: [SubscriptionOperation]) async throws
        -> [Result<Subscription?, ServerError>]
    {
        guard operations.count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) subscription operations per request")
        }
        let recipient = try await publicSubscriptionRecipient(scope)
        let operations = PublicSubscriptions.stored(operations, recipient: recipient)
        let ownDatabaseID = try await databaseID(scope.kind == .shared ? scope.privateScope : scope)
        let databaseID = scope.kind == .shared ? ShareRules.sharedSubscriptionKey(ownDatabaseID) : ownDatabaseID
        let results = try await driver.write { connection in
            try await self.lockDatabase(ownDatabaseID, connection)
            let usableZones = try await self.usableZones(operations, scope, databaseID: databaseID, connection)
            // Every stored id, and whether it counts against the caller's cap, in one read.
            let stored = try await connection.rows("SELECT subscription_id, subscription_id LIKE ? FROM subscriptions WHERE database_id = ?",
                                                   [.text(PublicSubscriptions.ownPattern(recipient: recipient)), .int(databaseID)])
            var batch = SubscriptionBatch(existing: stored.map { ($0.text(0), $0.int(1) != 0) })
            let results = operations.map { operation -> Result<Subscription?, ServerError> in
                switch operation {
                case .save(let subscription):
                    let zoneExists = subscription.zoneID.map { usableZones.contains(ZoneKey($0, in: scope)) } ?? true
                    if let refusal = SubscriptionRules.refusal(subscription, zoneExists: zoneExists,
                                                               otherCount: batch.ownCount(besides: subscription.subscriptionID)) {
                        return .failure(refusal)
                    }
                    batch.save(subscription)
                    return .success(subscription)
                case .delete(let id):
                    return batch.delete(id) ? .success(nil) : .failure(SubscriptionRules.notFound(id))
                }
            }
            try await self.writeSubscriptions(batch, databaseID: databaseID, connection)
            return results
        }
        subscriptionCache?.invalidate(databaseID)
        return PublicSubscriptions.answered(results, recipient: recipient)
    }

    /// The batch's net effect: one upsert of the subscriptions saved last, one delete of the rest.
    private func writeSubscriptions(_ batch: SubscriptionBatch, databaseID: Int64, _ connection: any StoreConnection) async throws {
        let dialect = connection.dialect
        if !batch.deleted.isEmpty {
            try await connection.execute("DELETE FROM subscriptions WHERE database_id = ? AND " + dialect.isInJSONArray("subscription_id"),
                                         [.int(databaseID), .text(JSONArgument.array(batch.deleted.sorted()))])
        }
        let rows = batch.saved.values.sorted { $0.subscriptionID < $1.subscriptionID }.map { subscription -> [SQLValue] in
            [.int(databaseID), .text(subscription.subscriptionID), dialect.jsonDocument(subscription.json.serialized())]
        }
        _ = try await connection.insertRows(
            into: "subscriptions",
            columns: [StoreColumn("database_id", .integer), StoreColumn("subscription_id", .text), StoreColumn("definition", dialect.payloadType)],
            rows: rows, suffix: dialect.upsert(conflict: ["database_id", "subscription_id"], update: ["definition"]))
        subscriptionCache?.invalidate(databaseID)
    }

    /// The zones the batch's zone subscriptions name that the caller may subscribe to, in one
    /// statement: its own live zones, or in the shared database the shared zones it accepted
    /// (one it may not use is one that does not exist).
    private func usableZones(_ operations: [SubscriptionOperation], _ scope: DatabaseScope, databaseID: Int64,
                             _ connection: any StoreConnection) async throws -> Set<ZoneKey>
    {
        let zones = operations.compactMap { operation -> ZoneID? in
            if case .save(let subscription) = operation { return subscription.zoneID }
            return nil
        }
        guard !zones.isEmpty else { return [] }
        let names = JSONArgument.array(Array(Set(zones.map(\.zoneName))).sorted())
        let dialect = connection.dialect
        guard scope.kind == .shared else {
            let rows = try await connection.rows("SELECT name FROM zones WHERE database_id = ? AND deleted = 0 AND " + dialect.isInJSONArray("name"),
                                                 [.int(databaseID), .text(names)])
            return Set(rows.map { ZoneKey(owner: nil, name: $0.text(0)) })
        }
        let rows = try await connection.rows(
            """
            SELECT u.record_name, z.name FROM share_participants p
            JOIN zones z ON z.id = p.zone_id AND z.deleted = 0
            JOIN databases d ON d.id = z.database_id AND d.container = ? AND d.environment = ?
            JOIN users u ON u.id = d.user_id
            WHERE p.user_id = ? AND p.status = 'ACCEPTED' AND
            """ + " " + dialect.isInJSONArray("z.name"),
            [.text(scope.container), .text(scope.environment.rawValue), .int(scope.userID), .text(names)])
        return Set(rows.map { ZoneKey(owner: $0.text(0), name: $0.text(1)) })
    }

    /// For the public database, the caller's private database (where its subscriptions deliver).
    func publicSubscriptionRecipient(_ scope: DatabaseScope) async throws -> Int64? {
        guard scope.database == .public else { return nil }
        guard !scope.isAnonymous else { throw ServerError(.authenticationRequired, "subscriptions need a user: send a web auth token") }
        return try await databaseID(scope.callersPrivateDatabase)
    }

    package func listSubscriptions(_ scope: DatabaseScope) async throws -> [Subscription] {
        let recipient = try await publicSubscriptionRecipient(scope)
        let ownDatabaseID = try await databaseID(scope.kind == .shared ? scope.privateScope : scope)
        let databaseID = scope.kind == .shared ? ShareRules.sharedSubscriptionKey(ownDatabaseID) : ownDatabaseID
        let stored = try await driver.read { connection in
            try await connection.rows("SELECT definition FROM subscriptions WHERE database_id = ? ORDER BY subscription_id",
                                      [.int(databaseID)]).map { try Subscription(json: try JSONValue.parse($0.blob(0))) }
        }
        return PublicSubscriptions.visible(stored, recipient: recipient)
    }

    // MARK: Notification channels

    /// A channel that delivers the database's notifications from now on: its start cursor is the
    /// last notification committed (read under the database's lock, so none commits behind it).
    package func createPushToken(_ scope: DatabaseScope, apnsEnvironment: String, authTokenHash: String?) async throws -> PushToken {
        try CredentialRules.validateAPIEnvironment(apnsEnvironment)
        let databaseID = try await databaseID(scope)
        let now = clock()
        let token = RandomToken.hex(bytes: 32)
        return try await driver.write { connection in
            try await self.lockDatabase(databaseID, connection)
            let start = try await connection.scalarInt(
                connection.dialect.numbersNotificationsPerDatabase
                    ? "SELECT note_seq FROM databases WHERE id = ?" : "SELECT MAX(id) FROM notifications WHERE database_id = ?",
                [.int(databaseID)]) ?? 0
            try await connection.execute(
                // Bound only to a hash that is a user token (a server key's signature is not).
                """
                INSERT INTO push_tokens (token, database_id, user_id, apns_environment, start_cursor, created_at, auth_token_hash)
                VALUES (?, ?, ?, ?, ?, ?, (SELECT token_hash FROM auth_tokens WHERE token_hash = ? AND user_id = ?))
                """,
                [.text(token), .int(databaseID), .int(scope.userID), .text(apnsEnvironment), .int(start), .int(now),
                 authTokenHash.map { .text($0) } ?? .null, .int(scope.userID)])
            return PushToken(token: token, apnsEnvironment: apnsEnvironment, databaseID: databaseID, startCursor: start)
        }
    }

    package func pushToken(_ scope: DatabaseScope, token: String) async throws -> PushToken {
        let databaseID = try await databaseID(scope)
        guard let row = try await driver.read({ connection in
            try await connection.first(
                "SELECT database_id, user_id, apns_environment, start_cursor, delivered_cursor FROM push_tokens WHERE token = ?", [.text(token)])
        }) else { throw ServerError(.notFound, "no such notification channel") }
        guard row.int(1) == scope.userID, row.int(0) == databaseID else {
            throw ServerError(.accessDenied, "this notification channel belongs to another user or container")
        }
        return PushToken(token: token, apnsEnvironment: row.text(2), databaseID: row.int(0), startCursor: row.int(3),
                         deliveredCursor: row.optionalInt(4))
    }
}

/// A zone a subscription names: its owner (a shared zone's) and name.
private struct ZoneKey: Hashable {
    var owner: String?
    var name: String

    init(owner: String?, name: String) {
        self.owner = owner
        self.name = name
    }

    /// A private or public zone is its name alone; a shared one names its owner too.
    init(_ zone: ZoneID, in scope: DatabaseScope) {
        self.init(owner: scope.kind == .shared ? zone.ownerRecordName : nil, name: zone.zoneName)
    }
}

/// A batch of subscription operations applied in order to the ids stored before it, so each
/// operation sees the ones before it (a save counts against the cap, a delete finds an earlier
/// save), and its net effect is written at the end.
private struct SubscriptionBatch {
    /// Every stored id, and whether it counts against the caller's cap.
    private var ids: [String: Bool]
    /// How many of `ids` count against the cap.
    private var ownTotal: Int
    private(set) var saved: [String: Subscription] = [:]
    private(set) var deleted: Set<String> = []

    init(existing: [(id: String, own: Bool)]) {
        ids = Dictionary(existing.map { ($0.id, $0.own) }, uniquingKeysWith: { first, _ in first })
        ownTotal = ids.values.filter { $0 }.count
    }

    /// How many of the caller's subscriptions there are besides `id`.
    func ownCount(besides id: String) -> Int { ownTotal - (ids[id] == true ? 1 : 0) }

    /// A save is the caller's own: its id carries the recipient the batch was stored under.
    mutating func save(_ subscription: Subscription) {
        let id = subscription.subscriptionID
        if ids[id] != true { ownTotal += 1 }
        ids[id] = true
        saved[id] = subscription
        deleted.remove(id)
    }

    /// False when there is no such subscription.
    mutating func delete(_ id: String) -> Bool {
        guard let own = ids.removeValue(forKey: id) else { return false }
        if own { ownTotal -= 1 }
        saved[id] = nil
        deleted.insert(id)
        return true
    }
}

/// Each database's subscriptions, read once and kept until they change: matching runs inside
/// every write transaction, so it must not cost a query. Only where one process writes (SQLite).
package final class SubscriptionCache: Sendable {
    private let byDatabase = Mutex<[Int64: [Subscription]]>([:])

    package init() {}

    func cached(_ databaseID: Int64) -> [Subscription]? { byDatabase.withLock { $0[databaseID] } }

    func keep(_ subscriptions: [Subscription], for databaseID: Int64) { byDatabase.withLock { $0[databaseID] = subscriptions } }

    func invalidate(_ databaseID: Int64) { byDatabase.withLock { $0[databaseID] = nil } }

    func invalidateAll() { byDatabase.withLock { $0.removeAll() } }
}
