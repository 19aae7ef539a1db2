import Foundation
import RecordModel
import Synchronization

// CloudKit's sharing rules, written once for every backend: the share record, its
// participants, the answers of resolve / accept / invitations, and the shared database's change
// feed. The backends read and write the rows (`shares`, `share_participants`) in the request's
// transaction and ask these functions what to do.

/// A participant's permission on a shared zone.
package enum SharePermission: String, Sendable {
    case readOnly = "READ_ONLY", readWrite = "READ_WRITE"
}

/// Where a participant is in the invitation's life.
package enum ShareAcceptance: String, Sendable {
    case invited = "INVITED", accepted = "ACCEPTED", removed = "REMOVED"

    /// The value answers carry: CloudKit calls an invitation not yet accepted `PENDING` (the
    /// stored rows keep this project's older name).
    package var cloudKitName: String { self == .invited ? "PENDING" : rawValue }
}

/// A user as `public/users/discover` and the share's participant list name it.
package struct UserIdentity: Sendable, Equatable {
    package init(id: Int64, name: String, recordName: String, email: String?) {
        self.id = id
        self.name = name
        self.recordName = recordName
        self.email = email
    }

    package var id: Int64
    package var name: String
    package var recordName: String
    package var email: String?

    /// `{"userRecordName", "lookupInfo", "nameComponents"}` as CloudKit's user identity.
    package var json: JSONValue {
        var lookup: [String: JSONValue] = ["userRecordName": .string(recordName)]
        if let email { lookup = ["emailAddress": .string(email)] }
        return ["userRecordName": .string(recordName), "lookupInfo": .object(lookup), "nameComponents": ["givenName": .string(name)]]
    }
}

/// One row of `share_participants`, joined with its user when it has one.
package struct ParticipantRow: Sendable {
    package var participantID: String
    package var user: UserIdentity?
    /// The address the owner invited (lower-cased), for a participant invited by email.
    package var email: String?
    package var permission: SharePermission
    package var status: ShareAcceptance

    package init(participantID: String, user: UserIdentity?, email: String?, permission: SharePermission, status: ShareAcceptance) {
        self.participantID = participantID
        self.user = user
        self.email = email
        self.permission = permission
        self.status = status
    }

    /// Whether this row invites `user` (by user or by the email given at `user create`).
    package func invites(_ user: UserIdentity) -> Bool {
        if let invited = self.user { return invited.id == user.id }
        guard let email, let userEmail = user.email else { return false }
        return email == userEmail.lowercased()
    }
}

/// One row of `shares`: the zone's share, with its owner.
package struct ShareRow: Sendable {
    package var zoneRowID: Int64
    package var zoneName: String
    package var shortGUID: String
    package var owner: UserIdentity
    package var title: String?

    package init(zoneRowID: Int64, zoneName: String, shortGUID: String, owner: UserIdentity, title: String?) {
        self.zoneRowID = zoneRowID
        self.zoneName = zoneName
        self.shortGUID = shortGUID
        self.owner = owner
        self.title = title
    }

    package var zoneID: ZoneID { ZoneID(zoneName: zoneName, ownerRecordName: owner.recordName) }
}

/// A participant as the owner's share record asks for it.
package struct RequestedParticipant: Sendable {
    package var userRecordName: String?
    package var email: String?
    package var permission: SharePermission
}

/// A shared zone the caller may use, as the access check found it in the request's transaction.
package struct SharedZoneAccess: Sendable {
    package var zone: ZoneRow
    package var ownerDatabaseID: Int64
    package var owner: UserIdentity
    package var permission: SharePermission

    package init(zone: ZoneRow, ownerDatabaseID: Int64, owner: UserIdentity, permission: SharePermission) {
        self.zone = zone
        self.ownerDatabaseID = ownerDatabaseID
        self.owner = owner
        self.permission = permission
    }

    package var zoneID: ZoneID { ZoneID(zoneName: zone.name, ownerRecordName: owner.recordName) }

    /// The owner's private database, where the zone lives.
    package func ownerScope(_ caller: DatabaseScope) -> DatabaseScope {
        DatabaseScope(user: User(id: owner.id, name: owner.name, recordName: owner.recordName), container: caller.container,
                      environment: caller.environment)
    }
}

/// An accepted participant to notify of a change in a shared zone.
package struct ParticipantChannel: Sendable {
    package var userRecordName: String
    /// The participant's private database: its notification outbox and, negated, the key of its
    /// shared-database subscriptions.
    package var databaseID: Int64

    package init(userRecordName: String, databaseID: Int64) {
        self.userRecordName = userRecordName
        self.databaseID = databaseID
    }
}

package enum ShareRules {
    package static let recordName = "cloudkit.zoneshare"
    package static let recordType = "cloudkit.share"
    package static let ownerParticipantID = "owner"

    /// The base of a share's `url` (`http://HOST:PORT`), set by the daemon once it listens.
    private static let linkBase = Mutex<String>("http://localhost")

    package static func setLinkBase(_ base: String) { linkBase.withLock { $0 = base } }

    /// The base as the current request's client reached the daemon (a trusted proxy's scheme and
    /// host included); the listening address when unset.
    @TaskLocal package static var requestLinkBase: String?

    package static func url(_ shortGUID: String) -> String { (requestLinkBase ?? linkBase.withLock { $0 }) + "/share/" + shortGUID }

    package static func newShortGUID() -> String { RandomToken.hex(bytes: 16) }
    package static func newParticipantID() -> String { RandomToken.hex(bytes: 8) }

    /// Subscriptions of a user's shared database are kept beside its private ones, under the
    /// negated id of its private database.
    package static func sharedSubscriptionKey(_ privateDatabaseID: Int64) -> Int64 { -privateDatabaseID }

    /// The answer for a zone the caller may not see: the same as for a zone that does not exist,
    /// so a stranger cannot tell a shared zone exists.
    package static func zoneNotFound(_ zone: ZoneID) -> ServerError {
        var error = ServerError(.zoneNotFound, "zone '\(zone.zoneName)' does not exist")
        error.zoneID = zone
        return error
    }

    package static func readOnly(_ zone: ZoneID) -> ServerError {
        ServerError(.accessDenied, "zone '\(zone.zoneName)' is shared with you read-only")
    }

    /// A shared-database request must name the zone's owner.
    package static func requireOwner(_ zone: ZoneID) throws -> String {
        guard let owner = zone.ownerRecordName, !owner.isEmpty else {
            throw ServerError.badRequest("a zoneID in the shared database needs the owner's ownerRecordName")
        }
        return owner
    }

    package static func normalizedEmail(_ email: String) throws -> String {
        let trimmed = email.trimmingCharacters(in: .whitespaces).lowercased()
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), Names.isValidName(trimmed), !trimmed.contains(" ") else {
            throw ServerError.badRequest("'\(email.prefix(100))' is not an email address")
        }
        return trimmed
    }

    /// The share record an owner saves: its `participants` (nil when the request leaves them
    /// as they are) and its fields (`cloudkit.title` only), serialized.
    package static func parseShareRecord(_ record: JSONValue, isNew: Bool) throws
        -> (participants: [RequestedParticipant]?, fieldsJSON: [UInt8]?)
    {
        if let type = record["recordType"], !type.isNull, type.stringValue != recordType {
            throw ServerError.badRequest("the share record '\(recordName)' must have recordType '\(recordType)'")
        }
        if isNew, record["recordType"]?.stringValue != recordType {
            throw ServerError.badRequest("the share record '\(recordName)' must have recordType '\(recordType)'")
        }
        if let permission = record["publicPermission"], !permission.isNull, permission.stringValue != "NONE" {
            throw ServerError.badRequest("publicPermission must be NONE: shares are by invitation only")
        }
        var fieldsJSON: [UInt8]?
        if let fields = record["fields"], !fields.isNull {
            guard let members = fields.objectValue else { throw ServerError.badRequest("fields must be an object") }
            var kept: [String: JSONValue] = [:]
            for (name, value) in members {
                guard name == "cloudkit.title" || name == "cloudkit.type" else {
                    throw ServerError.badRequest("a share record has no field '\(name.prefix(100))'; it takes cloudkit.title")
                }
                let text = value["value"]?.stringValue ?? value.stringValue
                guard let text else { throw ServerError.badRequest("\(name) must be a string") }
                kept[name] = ["value": .string(text), "type": "STRING"]
            }
            fieldsJSON = JSONValue.object(kept).serialized()
        }
        guard let list = record["participants"], !list.isNull else { return (nil, fieldsJSON) }
        guard let entries = list.arrayValue else { throw ServerError.badRequest("participants must be an array") }
        guard entries.count <= 1000 else { throw ServerError(.limitExceeded, "at most 1000 participants per share") }
        var requested: [RequestedParticipant] = []
        for entry in entries {
            guard case .object = entry else { throw ServerError.badRequest("every participant must be an object") }
            if entry["type"]?.stringValue == "OWNER" { continue }
            let permissionText = entry["permission"]?.stringValue ?? SharePermission.readOnly.rawValue
            guard let permission = SharePermission(rawValue: permissionText) else {
                throw ServerError.badRequest("participant permission must be READ_ONLY or READ_WRITE")
            }
            let identity = entry["userIdentity"] ?? .null
            let lookup = identity["lookupInfo"] ?? .null
            if let email = lookup["emailAddress"]?.stringValue {
                requested.append(RequestedParticipant(userRecordName: nil, email: try normalizedEmail(email), permission: permission))
            } else if let name = lookup["userRecordName"]?.stringValue ?? identity["userRecordName"]?.stringValue {
                requested.append(RequestedParticipant(userRecordName: name, email: nil, permission: permission))
            } else {
                throw ServerError.badRequest("every participant needs userIdentity.lookupInfo with an emailAddress or a userRecordName")
            }
        }
        return (requested, fieldsJSON)
    }

    /// The share's new participant list: who stays keeps its id and acceptance, who is new is
    /// invited, who is missing is removed. `users` resolves requested emails and record names to
    /// users (an email no user has yet stays an email invitation).
    package static func merge(existing: [ParticipantRow], requested: [RequestedParticipant], owner: UserIdentity,
                              userByRecordName: [String: UserIdentity], userByEmail: [String: UserIdentity]) throws -> [ParticipantRow]
    {
        var result: [ParticipantRow] = []
        var seenUsers = Set<Int64>()
        var seenEmails = Set<String>()
        for wanted in requested {
            var user: UserIdentity?
            if let name = wanted.userRecordName {
                guard let found = userByRecordName[name] else { throw ServerError.badRequest("no user with userRecordName '\(name.prefix(100))'") }
                user = found
            } else if let email = wanted.email {
                user = userByEmail[email]
            }
            if let user {
                if user.id == owner.id { continue }
                guard seenUsers.insert(user.id).inserted else { continue }
                if let email = user.email { seenEmails.insert(email.lowercased()) }
            } else if let email = wanted.email {
                guard seenEmails.insert(email).inserted else { continue }
            }
            let previous = existing.first { row in
                if let user { return row.user?.id == user.id || (row.user == nil && row.email != nil && row.email == user.email?.lowercased()) }
                return row.user == nil && row.email == wanted.email
            }
            result.append(ParticipantRow(participantID: previous?.participantID ?? newParticipantID(), user: user ?? previous?.user,
                                         email: wanted.email ?? previous?.email, permission: wanted.permission,
                                         status: previous?.status ?? .invited))
        }
        return result
    }

    static func participantJSON(_ row: ParticipantRow) -> JSONValue {
        var identity: [String: JSONValue] = [:]
        if let user = row.user {
            identity = user.json.objectValue ?? [:]
            if let email = row.email { identity["lookupInfo"] = ["emailAddress": .string(email)] }
        } else if let email = row.email {
            identity["lookupInfo"] = ["emailAddress": .string(email)]
        }
        return ["participantId": .string(row.participantID), "userIdentity": .object(identity), "type": "USER",
                "permission": .string(row.permission.rawValue), "acceptanceStatus": .string(row.status.cloudKitName)]
    }

    static func ownerJSON(_ owner: UserIdentity) -> JSONValue {
        ["participantId": .string(ownerParticipantID), "userIdentity": owner.json, "type": "OWNER", "permission": "READ_WRITE",
         "acceptanceStatus": "ACCEPTED"]
    }

    /// The share's members spliced into the share record's dictionary, as `caller` sees them.
    package static func shareJSON(_ share: ShareRow, participants: [ParticipantRow], callerRecordName: String) -> [UInt8] {
        let owner = ownerJSON(share.owner)
        let current: JSONValue
        if callerRecordName == share.owner.recordName {
            current = owner
        } else {
            current = participants.first { $0.user?.recordName == callerRecordName }.map(participantJSON) ?? .null
        }
        let members: [(String, JSONValue)] = [
            ("shortGUID", .string(share.shortGUID)), ("url", .string(url(share.shortGUID))), ("publicPermission", "NONE"),
            ("owner", owner), ("participants", .array([owner] + participants.map(participantJSON))),
            ("currentUserParticipant", current),
        ]
        var out: [UInt8] = []
        for (index, (key, value)) in members.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.appendString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            value.serialize(into: &out)
        }
        return out
    }

    /// One entry of `public/records/resolve` / `accept` for an invited caller.
    package static func resolveResult(_ share: ShareRow, shareRecord: StoredRecord, participant: ParticipantRow,
                                      scope: DatabaseScope) -> JSONValue
    {
        [
            "shortGUID": .string(share.shortGUID), "containerIdentifier": .string(scope.container),
            "environment": .string(scope.environment.rawValue), "databaseScope": "SHARED", "zoneID": share.zoneID.json,
            "share": shareRecord.json(), "ownerIdentity": share.owner.json, "participantType": "USER",
            "participantStatus": .string(participant.status.cloudKitName), "participantPermission": .string(participant.permission.rawValue),
        ]
    }

    /// A share link nobody can tell from one that never existed.
    package static func unknownShare(_ shortGUID: String) -> ServerError {
        var error = ServerError(.notFound, "no share '\(shortGUID.prefix(100))' for you")
        error.recordName = shortGUID
        return error
    }

    /// One entry of `shared/invitations/list`.
    package static func invitation(_ share: ShareRow, participant: ParticipantRow) -> JSONValue {
        var entry: [String: JSONValue] = [
            "shortGUID": .string(share.shortGUID), "url": .string(url(share.shortGUID)), "zoneID": share.zoneID.json,
            "owner": ["userRecordName": .string(share.owner.recordName), "name": .string(share.owner.name)],
            "permission": .string(participant.permission.rawValue),
        ]
        if let title = share.title { entry["title"] = .string(title) }
        return .object(entry)
    }

    /// The title stored in the share record's fields.
    package static func title(fieldsJSON: [UInt8]) -> String? {
        (try? JSONValue.parse(fieldsJSON))?["cloudkit.title"]?["value"]?.stringValue
    }

    package static func lookupInfos(_ body: [JSONValue]) throws -> (emails: [String], recordNames: [String]) {
        var emails: [String] = []
        var names: [String] = []
        guard body.count <= 400 else { throw ServerError(.limitExceeded, "at most 400 lookups per request") }
        for entry in body {
            if let email = entry["emailAddress"]?.stringValue {
                if let normalized = try? normalizedEmail(email) { emails.append(normalized) }
            } else if let name = entry["userRecordName"]?.stringValue {
                names.append(name)
            } else {
                throw ServerError.badRequest("every lookupInfo needs an emailAddress or a userRecordName")
            }
        }
        return (emails, names)
    }
}

/// The shared database's `changes/database`: the token holds the zones the caller could see and
/// their change sequences, so the next answer is the difference — zones added (accepted), changed,
/// and deleted (removed, unshared, left, or deleted by the owner) — without any per-participant
/// counter to bump on every write in a shared zone.
package enum SharedDatabaseFeed {
    package struct Entry: Sendable, Equatable {
        package var zoneRowID: Int64
        package var seq: Int64
        package var owner: String
        package var zoneName: String

        package init(zoneRowID: Int64, seq: Int64, owner: String, zoneName: String) {
            self.zoneRowID = zoneRowID
            self.seq = seq
            self.owner = owner
            self.zoneName = zoneName
        }
    }

    package static func token(storeID: String, userID: Int64, scope: DatabaseScope, entries: [Entry]) -> String {
        let list = JSONValue.array(entries.map { [.int($0.zoneRowID), .int($0.seq), .string($0.owner), .string($0.zoneName)] })
        return OpaqueToken.encode("sd1|\(storeID)|\(userID)|\(scope.container)|\(scope.environment.rawValue)|\(list.serializedString())")
    }

    package static func decode(_ token: String?, storeID: String, scope: DatabaseScope) throws -> [Entry] {
        guard let token else { return [] }
        let invalid = ServerError.badRequest("syncToken belongs to another database")
        let parts = OpaqueToken.decode(token)?.split(separator: "|", maxSplits: 5, omittingEmptySubsequences: false) ?? []
        guard parts.count == 6, parts[0] == "sd1", parts[1] == storeID, Int64(parts[2]) == scope.userID, parts[3] == scope.container,
            parts[4] == scope.environment.rawValue, let items = (try? JSONValue.parse(Array(parts[5].utf8)))?.arrayValue
        else { throw invalid }
        return try items.map { item in
            guard let values = item.arrayValue, values.count == 4, let id = values[0].int64Value, let seq = values[1].int64Value,
                let owner = values[2].stringValue, let name = values[3].stringValue
            else { throw invalid }
            return Entry(zoneRowID: id, seq: seq, owner: owner, zoneName: name)
        }
    }

    package static func page(storeID: String, scope: DatabaseScope, syncToken: String?, current: [Entry]) throws -> DatabaseChangesPage {
        let previous = try decode(syncToken, storeID: storeID, scope: scope)
        let before = Dictionary(previous.map { ($0.zoneRowID, $0) }, uniquingKeysWith: { a, _ in a })
        let now = Set(current.map(\.zoneRowID))
        var zones: [(zoneID: ZoneID, deleted: Bool)] = []
        for entry in current where before[entry.zoneRowID]?.seq != entry.seq {
            zones.append((ZoneID(zoneName: entry.zoneName, ownerRecordName: entry.owner), false))
        }
        for entry in previous where !now.contains(entry.zoneRowID) {
            zones.append((ZoneID(zoneName: entry.zoneName, ownerRecordName: entry.owner), true))
        }
        return DatabaseChangesPage(zones: zones, syncToken: token(storeID: storeID, userID: scope.userID, scope: scope, entries: current),
                                   moreComing: false)
    }
}
