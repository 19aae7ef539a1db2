import Foundation
import PostgresNIO
import RecordModel
import RecordStore

extension PostgresRecordStore {
    package func modifySubscriptions(_ scope: DatabaseScope, operations: [SubscriptionOperation]) async throws
        -> [Result<Subscription?, ServerError>]
    {
        guard operations.count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) subscription operations per request")
        }
        let recipient = try await publicSubscriptionRecipient(scope)
        let operations = PublicSubscriptions.stored(operations, recipient: recipient)
        // The public database's own row, or the caller's private one (its shared database's too).
        let ownDatabaseID = try await databaseID(scope.kind == .shared ? scope.privateScope : scope)
        // A user's shared-database subscriptions live beside its private ones, under the negated id.
        let databaseID = scope.kind == .shared ? ShareRules.sharedSubscriptionKey(ownDatabaseID) : ownDatabaseID
        let results = try await write { connection in
            try await self.lockDatabase(ownDatabaseID, connection)
            var results: [Result<Subscription?, ServerError>] = []
            for operation in operations {
                switch operation {
                case .save(let subscription):
                    var zoneExists = true
                    if let zone = subscription.zoneID {
                        if scope.kind != .shared {
                            zoneExists = try await self.liveZone(databaseID, name: zone.zoneName, connection) != nil
                        } else {
                            // A shared zone the caller may not use is one that does not exist.
                            do {
                                _ = try await self.sharedAccess(scope, zone, lockOwner: false, connection)
                            } catch is ServerError {
                                zoneExists = false
                            }
                        }
                    }
                    let own = PublicSubscriptions.ownPattern(recipient: recipient)
                    let others = try await connection.query(
                        """
                        SELECT COUNT(*) FROM subscriptions
                        WHERE database_id = \(databaseID) AND subscription_id != \(subscription.subscriptionID) AND subscription_id LIKE \(own)
                        """,
                        logger: self.logger
                    ).collect().first?.decode(Int64.self) ?? 0
                    if let refusal = SubscriptionRules.refusal(subscription, zoneExists: zoneExists, otherCount: Int(others)) {
                        results.append(.failure(refusal))
                        continue
                    }
                    let definition = String(decoding: subscription.json.serialized(), as: UTF8.self)
                    try await connection.query(
                        """
                        INSERT INTO subscriptions (database_id, subscription_id, definition) VALUES (\(databaseID), \(subscription.subscriptionID), \(definition))
                        ON CONFLICT (database_id, subscription_id) DO UPDATE SET definition = EXCLUDED.definition
                        """, logger: self.logger)
                    results.append(.success(subscription))
                case .delete(let id):
                    let removed = try await connection.query(
                        "DELETE FROM subscriptions WHERE database_id = \(databaseID) AND subscription_id = \(id) RETURNING 1", logger: self.logger
                    ).collect().count
                    results.append(removed > 0 ? .success(nil) : .failure(SubscriptionRules.notFound(id)))
                }
            }
            return results
        }
        return PublicSubscriptions.answered(results, recipient: recipient)
    }

    /// For the public database, the caller's private database (where its subscriptions deliver).
    func publicSubscriptionRecipient(_ scope: DatabaseScope) async throws -> Int64? {
        guard scope.database == .public else { return nil }
        guard !scope.isAnonymous else { throw ServerError(.authenticationRequired, "subscriptions need a user: send a web auth token") }
        return try await databaseID(scope.callersPrivateDatabase)
    }

    func subscriptions(_ databaseID: Int64, _ connection: PostgresConnection) async throws -> [Subscription] {
        try await connection.query(
            "SELECT definition FROM subscriptions WHERE database_id = \(databaseID) ORDER BY subscription_id", logger: logger
        ).collect().map { try Subscription(json: try JSONValue.parse(Array(try $0.decode(String.self).utf8))) }
    }

    package func listSubscriptions(_ scope: DatabaseScope) async throws -> [Subscription] {
        let recipient = try await publicSubscriptionRecipient(scope)
        let ownDatabaseID = try await databaseID(scope.kind == .shared ? scope.privateScope : scope)
        let databaseID = scope.kind == .shared ? ShareRules.sharedSubscriptionKey(ownDatabaseID) : ownDatabaseID
        return PublicSubscriptions.visible(try await read { try await self.subscriptions(databaseID, $0) }, recipient: recipient)
    }

    package func createPushToken(_ scope: DatabaseScope, apnsEnvironment: String, authTokenHash: String? = nil) async throws -> PushToken {
        try CredentialRules.validateAPIEnvironment(apnsEnvironment)
        let databaseID = try await databaseID(scope)
        let now = clock()
        return try await write { connection in
            // Under the database's lock: every notification up to note_seq has committed.
            let start = try await connection.query("SELECT note_seq FROM databases WHERE id = \(databaseID) FOR UPDATE", logger: self.logger)
                .collect().first?.decode(Int64.self) ?? 0
            let token = RandomToken.hex(bytes: 32)
            try await connection.query(
                """
                INSERT INTO push_tokens (token, database_id, user_id, apns_environment, start_cursor, created_at, auth_token_hash)
                VALUES (\(token), \(databaseID), \(scope.userID), \(apnsEnvironment), \(start), \(now),
                        (SELECT token_hash FROM auth_tokens WHERE token_hash = \(authTokenHash) AND user_id = \(scope.userID)))
                """, logger: self.logger)
            return PushToken(token: token, apnsEnvironment: apnsEnvironment, databaseID: databaseID, startCursor: start)
        }
    }

    package func pushToken(_ scope: DatabaseScope, token: String) async throws -> PushToken {
        let databaseID = try await databaseID(scope)
        return try await read { connection in
            guard let row = try await connection.query(
                "SELECT database_id, user_id, apns_environment, start_cursor FROM push_tokens WHERE token = \(token)", logger: self.logger
            ).collect().first else { throw ServerError(.notFound, "no such notification channel") }
            let (database, user, environment, start) = try row.decode((Int64, Int64, String, Int64).self)
            guard user == scope.userID, database == databaseID else {
                throw ServerError(.accessDenied, "this notification channel belongs to another user or container")
            }
            return PushToken(token: token, apnsEnvironment: environment, databaseID: database, startCursor: start)
        }
    }

    package func notifications(databaseID: Int64, after cursor: Int64, limit: Int) async throws -> [StoredNotification] {
        try await read { connection in
            try await connection.query(
                """
                SELECT id, payload FROM notifications WHERE database_id = \(databaseID) AND id > \(cursor) ORDER BY id LIMIT \(Int64(limit))
                """, logger: self.logger
            ).collect().map {
                let (id, payload) = try $0.decode((Int64, String).self)
                return StoredNotification(id: id, payload: Array(payload.utf8))
            }
        }
    }

    /// Writes the notifications the transaction's changes fire (`SubscriptionRules.fire`), in the
    /// same transaction. Their ids come from the database's `note_seq`, taken under the database's
    /// row lock the caller holds, so cursors commit in order.
    ///
    /// Public-database subscriptions deliver to their subscribers' private databases: those rows
    /// are locked after the public one (always in that order, so writers cannot deadlock), and
    /// announced here; the caller announces its own database. Returns the subscribers' databases.
    @discardableResult
    func recordNotifications(for changes: [CommittedChange], zone zoneName: String, databaseID: Int64, scope: DatabaseScope,
                             zoneChanged: Bool, _ connection: PostgresConnection) async throws -> Set<Int64>
    {
        try await engine.recordNotifications(for: changes, zone: zoneName, databaseID: databaseID, scope: scope, zoneChanged: zoneChanged,
                                             PostgresStoreConnection(connection: connection, logger: logger))
    }

    /// Appends payloads to a database's outbox, numbered by its `note_seq` (the UPDATE takes the
    /// row's lock); false when there was nothing to write.
    @discardableResult
    func writeNotifications(_ payloads: [[UInt8]], databaseID: Int64, _ connection: PostgresConnection) async throws -> Bool {
        guard !payloads.isEmpty else { return false }
        let count = Int64(payloads.count)
        let last = try await connection.query(
            "UPDATE databases SET note_seq = note_seq + \(count) WHERE id = \(databaseID) RETURNING note_seq", logger: logger
        ).collect().first?.decode(Int64.self) ?? count
        let now = clock()
        var id = last - count
        for payload in payloads {
            id += 1
            try await connection.query(
                "INSERT INTO notifications (database_id, id, created_at, payload) VALUES (\(databaseID), \(id), \(now), \(String(decoding: payload, as: UTF8.self)))",
                logger: logger)
        }
        return true
    }
}
