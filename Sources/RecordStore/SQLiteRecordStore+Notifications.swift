import Foundation
import RecordModel
import SQLiteDB

/// Each database's subscriptions, read once and kept until they change: matching runs inside
/// every write transaction, so it must not cost a query.
final class SubscriptionCache: @unchecked Sendable {
    private let lock = NSLock()
    private var byDatabase: [Int64: [Subscription]] = [:]

    func subscriptions(_ databaseID: Int64, _ connection: SQLiteConnection) throws -> [Subscription] {
        lock.lock()
        if let cached = byDatabase[databaseID] {
            lock.unlock()
            return cached
        }
        lock.unlock()
        let loaded = try connection.map("SELECT definition FROM subscriptions WHERE database_id = ? ORDER BY subscription_id",
                                        [.int(databaseID)]) { try Subscription(json: try JSONValue.parse($0.blob(0))) }
        lock.lock()
        byDatabase[databaseID] = loaded
        lock.unlock()
        return loaded
    }

    func invalidate(_ databaseID: Int64) {
        lock.lock()
        byDatabase[databaseID] = nil
        lock.unlock()
    }
}

extension SQLiteRecordStore {
    public static let maximumSubscriptions = 1000

    public func modifySubscriptions(_ scope: DatabaseScope, operations: [SubscriptionOperation]) throws
        -> [Result<Subscription?, ServerError>]
    {
        guard operations.count <= SQLiteRecordStore.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(SQLiteRecordStore.maximumOperations) subscription operations per request")
        }
        return try writeTransaction(scope) { connection, databaseID in
            defer { subscriptionCache.invalidate(databaseID) }
            return try operations.map { operation -> Result<Subscription?, ServerError> in
                switch operation {
                case .save(let subscription):
                    if let zone = subscription.zoneID, try liveZone(databaseID, name: zone.zoneName, connection) == nil {
                        var error = ServerError(.zoneNotFound, "zone '\(zone.zoneName)' does not exist")
                        error.subscriptionID = subscription.subscriptionID
                        return .failure(error)
                    }
                    if let query = subscription.query {
                        do {
                            _ = try RecordQuery(json: query)
                        } catch var error as ServerError {
                            error.subscriptionID = subscription.subscriptionID
                            return .failure(error)
                        }
                    }
                    // Saving an existing subscription replaces it: only a new one counts against the cap.
                    let count = try connection.scalarInt(
                        "SELECT COUNT(*) FROM subscriptions WHERE database_id = ? AND subscription_id != ?",
                        [.int(databaseID), .text(subscription.subscriptionID)]) ?? 0
                    guard count < SQLiteRecordStore.maximumSubscriptions else {
                        return .failure(ServerError(.limitExceeded, "at most \(SQLiteRecordStore.maximumSubscriptions) subscriptions per database"))
                    }
                    try connection.run("INSERT OR REPLACE INTO subscriptions (database_id, subscription_id, definition) VALUES (?, ?, ?)",
                                       [.int(databaseID), .text(subscription.subscriptionID), .blob(subscription.json.serialized())])
                    return .success(subscription)
                case .delete(let id):
                    let removed = try connection.run("DELETE FROM subscriptions WHERE database_id = ? AND subscription_id = ?",
                                                     [.int(databaseID), .text(id)])
                    guard removed > 0 else {
                        var error = ServerError(.notFound, "subscription '\(id)' does not exist")
                        error.subscriptionID = id
                        return .failure(error)
                    }
                    return .success(nil)
                }
            }
        }
    }

    public func listSubscriptions(_ scope: DatabaseScope) throws -> [Subscription] {
        try database.readSync { connection in
            let databaseID = try databaseID(scope)
            return try connection.map("SELECT definition FROM subscriptions WHERE database_id = ? ORDER BY subscription_id",
                                      [.int(databaseID)]) { try Subscription(json: try JSONValue.parse($0.blob(0))) }
        }
    }

    public func createPushToken(_ scope: DatabaseScope, apnsEnvironment: String) throws -> PushToken {
        guard apnsEnvironment == "development" || apnsEnvironment == "production" else {
            throw ServerError.badRequest("apnsEnvironment must be development or production")
        }
        return try writeTransaction(scope) { connection, databaseID in
            let start = try connection.scalarInt("SELECT MAX(id) FROM notifications WHERE database_id = ?", [.int(databaseID)]) ?? 0
            let token = RandomToken.hex(bytes: 32)
            try connection.run(
                "INSERT INTO push_tokens (token, database_id, user_id, apns_environment, start_cursor, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                [.text(token), .int(databaseID), .int(scope.userID), .text(apnsEnvironment), .int(start), .int(clock())])
            return PushToken(token: token, apnsEnvironment: apnsEnvironment, databaseID: databaseID, startCursor: start)
        }
    }

    public func pushToken(_ scope: DatabaseScope, token: String) throws -> PushToken {
        try database.readSync { connection in
            let databaseID = try databaseID(scope)
            guard let row = try connection.first(
                "SELECT database_id, user_id, apns_environment, start_cursor FROM push_tokens WHERE token = ?", [.text(token)], {
                    (database: $0.int64(0), user: $0.int64(1), environment: $0.text(2), start: $0.int64(3))
                })
            else { throw ServerError(.notFound, "no such notification channel") }
            guard row.user == scope.userID, row.database == databaseID else {
                throw ServerError(.accessDenied, "this notification channel belongs to another user or container")
            }
            return PushToken(token: token, apnsEnvironment: row.environment, databaseID: row.database, startCursor: row.start)
        }
    }

    public func notifications(databaseID: Int64, after cursor: Int64, limit: Int) throws -> [StoredNotification] {
        try database.readSync { connection in
            try connection.map("SELECT id, payload FROM notifications WHERE database_id = ? AND id > ? ORDER BY id LIMIT ?",
                               [.int(databaseID), .int(cursor), .int(Int64(limit))]) { StoredNotification(id: $0.int64(0), payload: $0.blob(1)) }
        }
    }

    public func purgeNotifications(olderThanMilliseconds age: Int64) throws -> Int {
        try database.writeSync { connection in
            try connection.run("DELETE FROM notifications WHERE created_at < ?", [.int(clock() - age)])
        }
    }

    /// Matches the changes of one transaction against the database's subscriptions and writes the
    /// notifications they fire, in the same transaction: a committed change always notifies and a
    /// rolled-back one never does. `zoneChanged` marks a zone created or deleted (database
    /// subscriptions fire even when no record changed).
    func recordNotifications(for changes: [CommittedChange], zone zoneName: String, databaseID: Int64, scope: DatabaseScope,
                             zoneChanged: Bool, _ connection: SQLiteConnection) throws
    {
        let subscriptions = try subscriptionCache.subscriptions(databaseID, connection)
        guard !subscriptions.isEmpty, !changes.isEmpty || zoneChanged else { return }
        let now = clock()
        var firedOnce: [String] = []
        func insert(_ body: [String: JSONValue]) throws {
            var ck = body
            ck["cid"] = .string(scope.container)
            ck["nid"] = .string(UUID().uuidString.lowercased())
            try connection.run("INSERT INTO notifications (database_id, created_at, payload) VALUES (?, ?, ?)",
                               [.int(databaseID), .int(now), .blob(JSONValue.object(["ck": .object(ck)]).serialized())])
        }
        for subscription in subscriptions {
            var fired = false
            switch subscription.kind {
            case .query:
                guard subscription.zoneID?.zoneName == zoneName, let queryJSON = subscription.query,
                    let query = try? RecordQuery(json: queryJSON)
                else { continue }
                for change in changes where change.recordType == query.recordType {
                    let trigger: Subscription.Trigger = change.kind == .created ? .create : change.kind == .updated ? .update : .delete
                    guard subscription.firesOn.contains(trigger) else { continue }
                    let values = ((try? JSONValue.parse(change.record.fieldsJSON).objectValue) ?? [:]).mapValues { $0["value"] ?? .null }
                    // Filters are validated when saved; one that still cannot be evaluated never fires,
                    // and never fails the write that is being committed.
                    guard query.filters.allSatisfy({ (try? SQLiteRecordStore.matches($0, record: change.record, values: values)) ?? false })
                    else { continue }
                    var desired: [String: JSONValue] = [:]
                    if trigger != .delete {
                        for key in subscription.desiredKeys { desired[key] = values[key] }
                    }
                    try insert(["qry": [
                        "rid": .string(change.recordName), "zid": .string(zoneName), "zoid": .string(scope.userRecordName),
                        "dbs": 2, "fo": .int(trigger.firesOnCode), "sid": .string(subscription.subscriptionID),
                        "af": .object(desired),
                    ]])
                    fired = true
                    if subscription.firesOnce { break }
                }
            case .zone:
                guard subscription.zoneID?.zoneName == zoneName, !changes.isEmpty || zoneChanged else { continue }
                try insert(["fet": [
                    "zid": .string(zoneName), "zoid": .string(scope.userRecordName), "dbs": 2, "sid": .string(subscription.subscriptionID),
                ]])
                fired = true
            case .database:
                try insert(["met": ["dbs": 2, "sid": .string(subscription.subscriptionID)]])
                fired = true
            }
            if fired && subscription.firesOnce { firedOnce.append(subscription.subscriptionID) }
        }
        for id in firedOnce {
            try connection.run("DELETE FROM subscriptions WHERE database_id = ? AND subscription_id = ?", [.int(databaseID), .text(id)])
        }
        if !firedOnce.isEmpty { subscriptionCache.invalidate(databaseID) }
    }
}
