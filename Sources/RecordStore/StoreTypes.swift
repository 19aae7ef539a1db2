import Synchronization
import RecordModel

/// `development` accepts new record types and fields just in time; `production` enforces the schema.
package enum Environment: String, Sendable, CaseIterable {
    case development, production
}

/// An authenticated user.
package struct User: Sendable, Equatable {
    /// Package-wide (the other backends' modules build answers too).
    package init(id: Int64, name: String, recordName: String) {
        self.id = id
        self.name = name
        self.recordName = recordName
    }

    package var id: Int64
    package var name: String
    package var recordName: String
}

/// Which database of a container a request addresses: the caller's own (`private`), the zones
/// other users shared with it (`shared`; the zone's owner comes from
/// `zoneID.ownerRecordName`), or the container's one public database shared by all users
/// (`public`).
package enum DatabaseKind: String, Sendable, Hashable {
    case `private`, shared, `public`
}

/// The database a request addresses and who is asking: a user's private database, the zones
/// shared with the user, or the container's public database read or written by a user, a
/// server-to-server key, or (reading only) a request that carries just a valid API token.
package struct DatabaseScope: Sendable, Hashable {
    /// The caller (0 for a public reader with an API token only).
    package var userID: Int64
    /// The caller's record name, written as creator and modifier (empty for an API-token reader).
    package var userRecordName: String
    package var container: String
    package var environment: Environment
    package var kind: DatabaseKind
    /// A server-to-server key acting as its user: it may change any public record.
    package var isServerKey = false

    /// The same as `kind` (the public database's code reads it under this name).
    package var database: DatabaseKind {
        get { kind }
        set { kind = newValue }
    }

    /// The user id under which the public databases are stored (no real user has it).
    package static let publicOwnerID: Int64 = 0
    /// `ownerRecordName` of the public database's zone, CloudKit's name for the default owner.
    package static let publicOwnerRecordName = "__defaultOwner__"

    package init(user: User, container: String, environment: Environment, kind: DatabaseKind = .private) {
        self.userID = user.id
        self.userRecordName = user.recordName
        self.container = container
        self.environment = environment
        self.kind = kind
    }

    /// The public database of `container`, as `caller` (nil: an API-token-only reader) sees it.
    package static func publicDatabase(caller: User?, container: String, environment: Environment, isServerKey: Bool = false) -> DatabaseScope {
        var scope = DatabaseScope(user: caller ?? User(id: 0, name: "", recordName: ""), container: container, environment: environment)
        scope.database = .public
        scope.isServerKey = isServerKey && caller != nil
        return scope
    }

    /// The caller's private database in the same container and environment.
    package var callersPrivateDatabase: DatabaseScope {
        var scope = privateScope
        scope.isServerKey = false
        return scope
    }

    /// The `user_id` of the database's row: the caller's for a private database.
    package var databaseOwnerID: Int64 { database == .public ? DatabaseScope.publicOwnerID : userID }
    /// `ownerRecordName` of the database's zones.
    package var zoneOwnerRecordName: String { database == .public ? DatabaseScope.publicOwnerRecordName : userRecordName }
    /// The database alone, without who is asking (a cache key for its row id).
    package var databaseKey: DatabaseScope {
        database == .public ? DatabaseScope.publicDatabase(caller: nil, container: container, environment: environment) : self
    }
    /// A public reader with an API token only.
    package var isAnonymous: Bool { userRecordName.isEmpty }
    /// `dbs` of the notifications this database's subscriptions fire.
    package var notificationDatabaseCode: Int64 { database == .public ? 1 : 2 }

    /// The same user's private database (a shared-database request's notification channel and
    /// subscriptions hang off it).
    package var privateScope: DatabaseScope {
        var scope = self
        scope.kind = .private
        return scope
    }

    package static func validateContainer(_ name: String) throws {
        let utf8 = Array(name.utf8)
        let valid = (1...255).contains(utf8.count) && utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
                || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
        }
        guard valid else { throw ServerError.badRequest("container must be 1-255 characters of [A-Za-z0-9._-]") }
    }
}

/// The seven operation types of `records/modify`.
package enum RecordOperationType: String, Sendable, CaseIterable {
    case create, update, forceUpdate, replace, forceReplace, delete, forceDelete

    package var needsTag: Bool { self == .update || self == .replace || self == .delete }
    package var isDelete: Bool { self == .delete || self == .forceDelete }
    package var replacesFields: Bool { self == .replace || self == .forceReplace }
}

/// One operation of a modify request. The record stays a wire dictionary until the store reads it,
/// because the types of fields sent without `type` come from the schema the store owns.
package struct RecordOperation: Sendable {
    package var type: RecordOperationType
    /// The record as sent, read member by member (`records/modify` reads it straight from the
    /// request's bytes).
    package var draft: RecordDraft { didSet { recordName = draft.recordName?.stringValue } }
    /// The record's `recordName` when it is a string, read once: a batch asks for it several times
    /// an operation.
    package private(set) var recordName: String?

    package init(type: RecordOperationType, draft: RecordDraft) {
        self.type = type
        self.draft = draft
        self.recordName = draft.recordName?.stringValue
    }

    package init(type: RecordOperationType, record: JSONValue) {
        self.init(type: type, draft: RecordDraft(json: record))
    }

    /// The record dictionary, for the readers of a whole record (shares, asset values).
    package var record: JSONValue {
        get { draft.json }
        set { draft = RecordDraft(json: newValue) }
    }
}

/// A record as stored: its system fields and its serialized fields dictionary, which responses
/// splice in without re-encoding.
package struct StoredRecord: Sendable {
    /// Package-wide (the other backends' modules build answers too).
    package init(recordName: String, recordType: String, changeTag: String, fieldsJSON: [UInt8], parent: String?,
                 created: ChangeStamp, modified: ChangeStamp, zoneID: ZoneID)
    {
        self.recordName = recordName
        self.recordType = recordType
        self.changeTag = changeTag
        self.fieldsJSON = fieldsJSON
        self.parent = parent
        self.created = created
        self.modified = modified
        self.zoneID = zoneID
    }

    package var recordName: String
    package var recordType: String
    package var changeTag: String
    package var fieldsJSON: [UInt8]
    package var parent: String?
    package var created: ChangeStamp
    package var modified: ChangeStamp
    package var zoneID: ZoneID
    /// For the share record `cloudkit.zoneshare`: its sharing members (`shortGUID`, `url`, `owner`,
    /// `participants`, …) serialized without braces, spliced after `fields`.
    package var shareJSON: [UInt8]?

    package func record() throws -> Record {
        var record = Record(recordName: recordName, recordType: recordType, fields: try Record.fields(fromStoredJSON: fieldsJSON),
                            recordChangeTag: changeTag, parent: parent, zoneID: zoneID)
        record.created = created
        record.modified = modified
        return record
    }
}

/// The outcome of one modify operation.
package enum RecordOperationResult: Sendable {
    case saved(StoredRecord)
    case deleted(recordName: String)
    case failed(ServerError)
}

/// An entry of a change feed: a record's latest state or its tombstone. A tombstone's
/// `modified` is the deletion's stamp (who deleted, when, from which device); nil for a row
/// that recorded no deleter.
package enum RecordChange: Sendable {
    case changed(StoredRecord)
    case deleted(recordName: String, recordType: String, modified: ChangeStamp?)
}

/// One page of a zone's change feed.
package struct ZoneChangesPage: Sendable {
    /// Package-wide (the other backends' modules build answers too).
    package init(zoneID: ZoneID, changes: [RecordChange], syncToken: String, moreComing: Bool) {
        self.zoneID = zoneID
        self.changes = changes
        self.syncToken = syncToken
        self.moreComing = moreComing
    }

    package var zoneID: ZoneID
    package var changes: [RecordChange]
    package var syncToken: String
    package var moreComing: Bool
}

/// One page of a database's zone changes.
package struct DatabaseChangesPage: Sendable {
    /// Package-wide (the other backends' modules build answers too).
    package init(zones: [(zoneID: ZoneID, deleted: Bool)], syncToken: String, moreComing: Bool) {
        self.zones = zones
        self.syncToken = syncToken
        self.moreComing = moreComing
    }

    package var zones: [(zoneID: ZoneID, deleted: Bool)]
    package var syncToken: String
    package var moreComing: Bool
}

/// A live zone with its current sync token.
package struct ZoneInfo: Sendable {
    /// Package-wide (the other backends' modules build answers too).
    package init(zoneID: ZoneID, syncToken: String) {
        self.zoneID = zoneID
        self.syncToken = syncToken
    }

    package var zoneID: ZoneID
    package var syncToken: String
    /// A shared zone the caller may only read (its writes are `ACCESS_DENIED`).
    package var readOnly = false

    package var json: JSONValue { ["zoneID": zoneID.json, "syncToken": .string(syncToken), "atomic": true] }
}

/// A query of `records/query`.
package struct RecordQuery: Sendable {
    package var recordType: String
    package var filters: [QueryFilter]
    package var sorts: [QuerySort]
}

package enum QueryComparator: String, Sendable, CaseIterable {
    case equals = "EQUALS", notEquals = "NOT_EQUALS", lessThan = "LESS_THAN", lessThanOrEquals = "LESS_THAN_OR_EQUALS"
    case greaterThan = "GREATER_THAN", greaterThanOrEquals = "GREATER_THAN_OR_EQUALS", `in` = "IN", notIn = "NOT_IN"
    case beginsWith = "BEGINS_WITH", listContains = "LIST_CONTAINS"
}

/// A field a filter or sort names: a record field or one of the system fields.
package enum QueryField: Sendable, Equatable {
    case field(String)
    case recordName, createdTimestamp, modifiedTimestamp
}

package struct QueryFilter: Sendable {
    package var comparator: QueryComparator
    package var field: QueryField
    package var value: JSONValue
}

package struct QuerySort: Sendable {
    package var field: QueryField
    package var ascending: Bool
}

package struct QueryPage: Sendable {
    /// Package-wide (the other backends' modules build answers too).
    package init(records: [StoredRecord], continuationMarker: String?) {
        self.records = records
        self.continuationMarker = continuationMarker
    }

    package var records: [StoredRecord]
    package var continuationMarker: String?
    /// How many rows the store's scans read for this page (tests check that a page costs
    /// about its size, not the zone's).
    package var rowsVisited = 0
}

/// One operation of `subscriptions/modify`.
package enum SubscriptionOperation: Sendable {
    case save(Subscription)  // create or update
    case delete(subscriptionID: String)
}

/// A device's notification channel.
package struct PushToken: Sendable {
    /// Package-wide (the other backends' modules build answers too).
    package init(token: String, apnsEnvironment: String, databaseID: Int64, startCursor: Int64, deliveredCursor: Int64? = nil) {
        self.token = token
        self.apnsEnvironment = apnsEnvironment
        self.databaseID = databaseID
        self.startCursor = startCursor
        self.deliveredCursor = deliveredCursor
    }

    package var token: String
    package var apnsEnvironment: String
    package var databaseID: Int64
    /// Where delivery starts for a poll that gives no cursor: the newest notification when the
    /// token was made.
    package var startCursor: Int64
    /// How far polls without a cursor (CloudKit JS's, one notification an answer) have been
    /// answered; nil before the first such answer.
    package var deliveredCursor: Int64?

    /// Where the next poll without a cursor starts.
    package var barePollPosition: Int64 { max(startCursor, deliveredCursor ?? startCursor) }
}

/// A notification as stored: its cursor and its serialized `{"ck": …}` payload.
package struct StoredNotification: Sendable {
    /// Package-wide (the other backends' modules build answers too).
    package init(id: Int64, payload: [UInt8]) {
        self.id = id
        self.payload = payload
    }

    package var id: Int64
    package var payload: [UInt8]
}

/// Delivery cursors travel as opaque base64, like sync tokens.
package enum NotificationCursor {
    package static func encode(_ id: Int64) -> String { OpaqueToken.encode("n1|\(id)") }

    package static func decode(_ cursor: String) throws -> Int64 {
        let parts = OpaqueToken.decode(cursor)?.split(separator: "|") ?? []
        guard parts.count == 2, parts[0] == "n1", let id = Int64(parts[1]), id >= 0 else {
            throw ServerError.badRequest("not a valid notification cursor")
        }
        return id
    }
}

/// Totals for monitoring.
package struct StoreStatistics: Sendable {
    /// Package-wide (the other backends' modules build answers too).
    package init(records: Int, zones: Int, notifications: Int) {
        self.records = records
        self.zones = zones
        self.notifications = notifications
    }

    package var records: Int
    package var zones: Int
    package var notifications: Int
}
