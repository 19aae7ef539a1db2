import Foundation
import RecordModel

// CloudKit's subscription rules, written once for every backend (see StoreRules.swift).

/// The rules of subscriptions and of the notifications they fire.
package enum SubscriptionRules {
    /// Why a subscription cannot be saved (`zoneExists` is whether its zone, if it names one, is
    /// live), or nil; `otherCount` is how many other subscriptions the database holds.
    package static func refusal(_ subscription: Subscription, zoneExists: Bool, otherCount: Int) -> ServerError? {
        if subscription.zoneID != nil, !zoneExists {
            var error = ServerError(.zoneNotFound, "zone '\(subscription.zoneID!.zoneName)' does not exist")
            error.subscriptionID = subscription.subscriptionID
            return error
        }
        if let query = subscription.query {
            do {
                _ = try RecordQuery(json: query)
            } catch var error as ServerError {
                error.subscriptionID = subscription.subscriptionID
                return error
            } catch {
                return ServerError.badRequest("invalid query")
            }
        }
        // Saving an existing subscription replaces it: only a new one counts against the cap.
        guard otherCount < StoreLimits.maximumSubscriptions else {
            return ServerError(.limitExceeded, "at most \(StoreLimits.maximumSubscriptions) subscriptions per database")
        }
        return nil
    }

    package static func notFound(_ id: String) -> ServerError {
        var error = ServerError(.notFound, "subscription '\(id)' does not exist")
        error.subscriptionID = id
        return error
    }

    /// The notifications one transaction's changes fire (serialized `{"ck": …}` payloads, in
    /// order) and the fire-once subscriptions that fired and must be removed. `zoneChanged` marks
    /// a zone created or deleted (database subscriptions fire even when no record changed).
    ///
    /// Each payload goes to `recipient`, the row id of the database whose notification channels
    /// receive it: nil for the database that changed, the subscriber's private database for a
    /// public-database subscription (`PublicSubscriptions`).
    ///
    /// For a private zone `scope` is the zone owner's private database. `dbs` is nil for the
    /// database's own code (2 private, 1 public) and 3 for a participant's shared-database
    /// subscriptions, which name the zone with its owner (two users may share zones of the same name).
    package static func fire(_ subscriptions: [Subscription], changes: [CommittedChange], zone zoneName: String, scope: DatabaseScope,
                             zoneChanged: Bool, dbs dbsCode: Int64? = nil) -> (payloads: [(recipient: Int64?, payload: [UInt8])], firedOnce: [String])
    {
        let isSharedDatabase = dbsCode == 3
        func inZone(_ subscription: Subscription) -> Bool {
            guard subscription.zoneID?.zoneName == zoneName else { return false }
            return !isSharedDatabase || subscription.zoneID?.ownerRecordName == scope.userRecordName
        }
        guard !subscriptions.isEmpty, !changes.isEmpty || zoneChanged else { return ([], []) }
        var payloads: [(recipient: Int64?, payload: [UInt8])] = []
        var firedOnce: [String] = []
        let dbs = JSONValue.int(dbsCode ?? scope.notificationDatabaseCode)
        let zoneOwner = JSONValue.string(scope.zoneOwnerRecordName)
        var recipient: Int64?
        var subscriptionID = ""
        func insert(_ body: [String: JSONValue]) {
            var ck = body
            ck["cid"] = .string(scope.container)
            ck["nid"] = .string(RandomID.uuidString())
            payloads.append((recipient, JSONValue.object(["ck": .object(ck)]).serialized()))
        }
        for subscription in subscriptions {
            if scope.database == .public {
                guard let owned = PublicSubscriptions.split(subscription.subscriptionID) else { continue }
                (recipient, subscriptionID) = (owned.recipient, owned.id)
            } else {
                (recipient, subscriptionID) = (nil, subscription.subscriptionID)
            }
            var fired = false
            switch subscription.kind {
            case .query:
                guard inZone(subscription), let queryJSON = subscription.query,
                    let query = try? RecordQuery(json: queryJSON)
                else { continue }
                for change in changes where change.recordType == query.recordType {
                    let trigger: Subscription.Trigger = change.kind == .created ? .create : change.kind == .updated ? .update : .delete
                    guard subscription.firesOn.contains(trigger) else { continue }
                    let values = ((try? JSONValue.parse(change.record.fieldsJSON).objectValue) ?? [:]).mapValues { $0["value"] ?? .null }
                    // Filters are validated when saved; one that still cannot be evaluated never fires,
                    // and never fails the write that is being committed.
                    guard query.filters.allSatisfy({ (try? QueryRules.matches($0, record: change.record, values: values)) ?? false })
                    else { continue }
                    var desired: [String: JSONValue] = [:]
                    if trigger != .delete {
                        for key in subscription.desiredKeys { desired[key] = values[key] }
                    }
                    insert(["qry": [
                        "rid": .string(change.recordName), "zid": .string(zoneName), "zoid": zoneOwner,
                        "dbs": dbs, "fo": .int(trigger.firesOnCode), "sid": .string(subscriptionID),
                        "af": .object(desired),
                    ]])
                    fired = true
                    if subscription.firesOnce { break }
                }
            case .zone:
                guard inZone(subscription), !changes.isEmpty || zoneChanged else { continue }
                insert(["fet": [
                    "zid": .string(zoneName), "zoid": zoneOwner, "dbs": dbs, "sid": .string(subscriptionID),
                ]])
                fired = true
            case .database:
                insert(["met": ["dbs": dbs, "sid": .string(subscriptionID)]])
                fired = true
            }
            if fired && subscription.firesOnce { firedOnce.append(subscription.subscriptionID) }
        }
        return (payloads, firedOnce)
    }
}

/// Subscriptions in the public database belong to the user who saved them: each is stored as
/// `RECIPIENT|ID`, RECIPIENT being the row id of that user's private database in the same
/// container, whose notification channels receive what it fires. Users see and change only their
/// own, under their own IDs.
package enum PublicSubscriptions {
    package static func split(_ storedID: String) -> (recipient: Int64, id: String)? {
        guard let bar = storedID.firstIndex(of: "|"), let recipient = Int64(storedID[..<bar]) else { return nil }
        return (recipient, String(storedID[storedID.index(after: bar)...]))
    }

    /// A SQL `LIKE` pattern matching the caller's own stored subscriptions (all, in a private
    /// database): the per-database cap counts each user's package subscriptions on their own.
    package static func ownPattern(recipient: Int64?) -> String { recipient.map { "\($0)|%" } ?? "%" }

    /// The operations as stored (identity when `recipient` is nil: a private database).
    package static func stored(_ operations: [SubscriptionOperation], recipient: Int64?) -> [SubscriptionOperation] {
        guard let recipient else { return operations }
        return operations.map { operation in
            switch operation {
            case .save(var subscription):
                subscription.subscriptionID = "\(recipient)|\(subscription.subscriptionID)"
                return .save(subscription)
            case .delete(let id):
                return .delete(subscriptionID: "\(recipient)|\(id)")
            }
        }
    }

    /// Answers under the caller's own IDs.
    package static func answered(_ results: [Result<Subscription?, ServerError>], recipient: Int64?) -> [Result<Subscription?, ServerError>] {
        guard recipient != nil else { return results }
        return results.map { result in
            switch result {
            case .success(let subscription): return .success(subscription.map(unstored))
            case .failure(var error):
                if let id = error.subscriptionID, let owned = split(id) { error.subscriptionID = owned.id }
                return .failure(error)
            }
        }
    }

    /// The caller's own subscriptions among those stored.
    package static func visible(_ subscriptions: [Subscription], recipient: Int64?) -> [Subscription] {
        guard let recipient else { return subscriptions }
        return subscriptions.filter { split($0.subscriptionID)?.recipient == recipient }.map(unstored)
    }

    static func unstored(_ subscription: Subscription) -> Subscription {
        var copy = subscription
        if let owned = split(subscription.subscriptionID) { copy.subscriptionID = owned.id }
        return copy
    }
}

/// Random identifiers and secrets from the system's CSPRNG.
