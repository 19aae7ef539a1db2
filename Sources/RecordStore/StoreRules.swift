import Foundation
import RecordModel

// CloudKit's rules, written once for every backend: each function here decides from values the
// backend has read; the backends (SQLite here, PostgreSQL in its own module) only read and write.

/// Limits every backend enforces.
package enum StoreLimits {
    package static let maximumOperations = 400
    package static let maximumRecordBytes = 1_000_000
    package static let maximumResultsLimit = 400
    package static let maximumQueryResults = 200
    package static let maximumSubscriptions = 1000

    /// 0 or less means "as many as allowed", as CloudKit reads a zero limit.
    package static func clampLimit(_ limit: Int, maximum: Int) -> Int { limit <= 0 ? maximum : min(limit, maximum) }
}

/// A live zone's row id and change sequence.
package struct ZoneRow: Sendable {
    package var id: Int64
    package var name: String
    package var seq: Int64
    package var purgedSeq: Int64

    package init(id: Int64, name: String, seq: Int64, purgedSeq: Int64) {
        self.id = id
        self.name = name
        self.seq = seq
        self.purgedSeq = purgedSeq
    }
}

/// How a reference's action is stored in the `refs` table.
package enum StoredReferenceAction: Int64 {
    case deleteSelf = 1, validate = 2
}

/// A change made by a modify transaction, for notifications.
package struct CommittedChange: Sendable {
    package enum Kind: Sendable { case created, updated, deleted }
    package var kind: Kind
    package var recordName: String
    package var recordType: String
    /// The record after a save; its last state before a deletion.
    package var record: StoredRecord
    /// The zone's sequence number the change took (its tombstone's, for a deletion); 0 where unknown.
    package var sequence: Int64

    package init(kind: Kind, recordName: String, recordType: String, record: StoredRecord, sequence: Int64 = 0) {
        self.kind = kind
        self.recordName = recordName
        self.recordType = recordType
        self.record = record
        self.sequence = sequence
    }
}

/// A record row as the modify path needs it.
package struct ExistingRecord: Sendable {
    package var type: String
    package var tag: String
    package var deleted: Bool
    package var fieldsJSON: [UInt8]
    package var parent: String?
    package var created: ChangeStamp
    package var modified: ChangeStamp

    package init(type: String, tag: String, deleted: Bool, fieldsJSON: [UInt8], parent: String?, created: ChangeStamp, modified: ChangeStamp) {
        self.type = type
        self.tag = tag
        self.deleted = deleted
        self.fieldsJSON = fieldsJSON
        self.parent = parent
        self.created = created
        self.modified = modified
    }

    package func stored(_ name: String, zoneID: ZoneID) -> StoredRecord {
        StoredRecord(recordName: name, recordType: type, changeTag: tag, fieldsJSON: fieldsJSON, parent: parent,
                     created: created, modified: modified, zoneID: zoneID)
    }
}

/// The rules of `records/modify`.
package enum RecordRules {
    /// The batch's shape: at most 400 operations, each naming a distinct record.
    package static func validateBatch(_ operations: [RecordOperation]) throws {
        try checkOperationCount(operations.count)
        // A name seen twice is found with an open-addressed table of the names' hashes and
        // indexes: a `Set<String>` hashed each name with SipHash, 2–4 % of a batch write's store
        // time. (Colliding names cost string comparisons, bounded by the operations' limit.)
        var capacity = 16
        while capacity < 2 * operations.count { capacity *= 2 }
        var slots = [(hash: UInt64, index: Int)](repeating: (0, -1), count: capacity)
        for index in operations.indices {
            guard let name = operations[index].recordName else {
                throw ServerError.badRequest("every operation needs a record with a string recordName")
            }
            let hash = nameHash(name)
            var slot = Int(truncatingIfNeeded: hash) & (capacity - 1)
            while slots[slot].index >= 0 {
                if slots[slot].hash == hash, operations[slots[slot].index].recordName == name {
                    throw ServerError.badRequest("record '\(name)' appears in more than one operation")
                }
                slot = (slot + 1) & (capacity - 1)
            }
            slots[slot] = (hash, index)
        }
    }

    /// A fast hash of a name's bytes, eight at a time (not keyed: only for `validateBatch`'s table).
    static func nameHash(_ name: String) -> UInt64 {
        func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
            var hash: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
            var offset = 0
            while offset + 8 <= bytes.count {
                hash = (hash ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0x0000_0100_0000_01B3
                hash ^= hash >> 29
                offset += 8
            }
            while offset < bytes.count {
                hash = (hash ^ UInt64(bytes[offset])) &* 0x0000_0100_0000_01B3
                offset += 1
            }
            return hash ^ (hash >> 32)
        }
        if let hashed = name.utf8.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0)) }) { return hashed }
        return Array(name.utf8).withUnsafeBytes(hash)
    }

    /// A batch carries at most `StoreLimits.maximumOperations` operations (checked before its
    /// records are read, and again by `validateBatch`).
    package static func checkOperationCount(_ count: Int) throws {
        guard count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) operations per request, got \(count)")
        }
    }

    /// In a failed atomic batch, every operation that would have succeeded reports `ATOMIC_ERROR`.
    package static func atomicFailure(_ result: RecordOperationResult) -> RecordOperationResult {
        switch result {
        case .failed: return result
        case .saved(let record): return .failed(atomicError(recordName: record.recordName))
        case .deleted(let name): return .failed(atomicError(recordName: name))
        }
    }

    /// What an operation of a failed atomic batch reports when it would itself have succeeded.
    package static func atomicError(recordName: String?) -> ServerError {
        ServerError(.atomicError, "another operation of this atomic batch failed").with(recordName: recordName)
    }

    package static func changeTag(zoneRowID: Int64, sequence: Int64) -> String {
        // Digits written into one small buffer: `String(_:radix:)` (generic) and the two
        // concatenations were 4% of a batch write's store time.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 27) { buffer in
            var end = 0
            JSONValue.writeDigits(UInt64(max(zoneRowID, 0)), radix: 36, into: buffer, at: &end)
            buffer[end] = UInt8(ascii: "-")
            end += 1
            JSONValue.writeDigits(UInt64(max(sequence, 0)), radix: 36, into: buffer, at: &end)
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[..<end]), as: UTF8.self)
        }
    }

    /// What one operation does, decided from the record's current row.
    package enum Plan {
        /// Nothing to write (a `forceDelete` of a record that does not exist).
        case answered(RecordOperationResult)
        /// Delete the record, with its `DELETE_SELF` cascade.
        case delete
        case save(PreparedSave)
    }

    /// A save the rules accept, once the records in `mustBeLive` are found live.
    package struct PreparedSave {
        package var record: Record
        package var fieldsJSON: [UInt8]
        /// References with an action (`DELETE_SELF` or `VALIDATE`), kept in the `refs` table.
        package var references: [(field: String, reference: Reference)]
        /// Records that must be live for the save to be valid, with the error if one is not.
        package var mustBeLive: [(recordName: String, error: ServerError)]
        /// The enforcer with the fields this save adds (development).
        package var enforcer: SchemaEnforcer
        package var isNew: Bool
    }

    package static func plan(_ operation: RecordOperation, name: String, live: ExistingRecord?, zoneName: String, zoneID: ZoneID,
                             scope: DatabaseScope, enforcer transactionEnforcer: SchemaEnforcer) throws -> Plan
    {
        try AccessRules.checkWrite(scope, recordName: name, live: live)
        let tagJSON = operation.draft.recordChangeTag
        if let tagJSON, !tagJSON.isNull, tagJSON.stringValue == nil {
            throw ServerError.badRequest("recordChangeTag must be a string")
        }
        func conflictIfStale() throws {
            guard let live, operation.type.needsTag else { return }
            let sentTag = tagJSON?.stringValue
            guard sentTag == live.tag else {
                var error = ServerError(.conflict, sentTag == nil
                    ? "\(operation.type.rawValue) needs the record's recordChangeTag"
                    : "record '\(name)' was changed since change tag \(sentTag!)")
                error.serverRecord = live.stored(name, zoneID: zoneID).json()
                throw error
            }
        }

        if operation.type.isDelete {
            guard live != nil else {
                if operation.type == .forceDelete { return .answered(.deleted(recordName: name)) }
                throw ServerError(.notFound, "record '\(name)' does not exist")
            }
            try conflictIfStale()
            return .delete
        }

        switch operation.type {
        case .create:
            if live != nil { throw ServerError(.exists, "record '\(name)' already exists") }
        case .update, .replace:
            guard live != nil else { throw ServerError(.notFound, "record '\(name)' does not exist") }
            try conflictIfStale()
        default:
            break
        }

        // The record's type is the same for all its fields: its declared fields are fetched once.
        var declaredFor: String?
        var declared = SchemaEnforcer.TypeFields.none
        var record = try Record(draft: operation.draft) { type, field in
            let recordType = type.isEmpty ? (live?.type ?? "") : type
            if declaredFor != recordType {
                declaredFor = recordType
                declared = transactionEnforcer.declaredFields(recordType: recordType)
            }
            return declared.type(field)
        }
        if record.recordType.isEmpty {
            guard let live else { throw ServerError.badRequest("record '\(name)' needs a recordType") }
            record.recordType = live.type
        } else if let live, live.type != record.recordType {
            throw ServerError.badRequest("record '\(name)' is a \(live.type); its type cannot change to \(record.recordType)")
        }
        if let live, !operation.type.replacesFields {
            // update / forceUpdate: change only the given fields.
            var merged = try Record.fields(fromStoredJSON: live.fieldsJSON)
            for (field, value) in record.fields { merged[field] = value }
            for field in record.removedFieldNames { merged[field] = nil }
            record.fields = merged
            if operation.draft.parent == nil { record.parent = live.parent }
        }
        // An unchanged parent is not checked again: parents do not cascade, so it may have been
        // deleted since, and that must not make the child unchangeable.
        let parentIsNew = live == nil || live?.parent != record.parent
        var enforcer = transactionEnforcer
        try enforcer.check(record)
        let fieldsJSON = record.fieldsJSONBytes()
        guard fieldsJSON.count <= StoreLimits.maximumRecordBytes else {
            throw ServerError(.limitExceeded, "record '\(name)' is \(fieldsJSON.count) bytes; the limit is \(StoreLimits.maximumRecordBytes)")
        }
        let allReferences = record.references
        for (field, reference) in allReferences where reference.zoneName.map({ $0 != zoneName }) ?? false {
            throw ServerError.badRequest("field '\(field)' references a record in zone '\(reference.zoneName ?? "")'; a reference points to a record in the same zone")
        }
        let references = allReferences.filter { $0.reference.action != .none }
        var mustBeLive: [(recordName: String, error: ServerError)] = []
        for (field, reference) in references where reference.recordName != name {
            mustBeLive.append((reference.recordName, ServerError(.validatingReferenceError,
                                                                 "field '\(field)' references '\(reference.recordName)', which does not exist")))
        }
        if parentIsNew, let parent = record.parent, parent != name {
            mustBeLive.append((parent, ServerError(.validatingReferenceError, "parent '\(parent)' does not exist")))
        }
        return .save(PreparedSave(record: record, fieldsJSON: fieldsJSON, references: references.map { ($0.field, $0.reference) },
                                  mustBeLive: mustBeLive, enforcer: enforcer, isNew: live == nil))
    }

    /// The `VALIDATE` rule of a cascade: a live `VALIDATE` reference from outside the doomed set
    /// fails the whole delete.
    package static func checkValidateBlockers(target: String, validatingSources: [String], doomed: Set<String>) throws {
        if let blocker = validatingSources.first(where: { !doomed.contains($0) }) {
            throw ServerError(.validatingReferenceError, "record '\(target)' is referenced by '\(blocker)' with VALIDATE")
        }
    }
}

/// Who may write what. Checked inside the write transaction, against the row the transaction
/// read, so no backend can forget it and no concurrent write can slip between check and change.
package enum AccessRules {
    /// Public database: a user (or key) creates; only the record's creator or a server-to-server
    /// key changes or deletes an existing record (`ACCESS_DENIED`, which fails the whole request).
    package static func checkWrite(_ scope: DatabaseScope, recordName: String, live: ExistingRecord?) throws {
        guard scope.database == .public else { return }
        guard !scope.isAnonymous else {
            throw ServerError(.authenticationRequired, "writing to the public database needs a user: send a web auth token")
        }
        if let live, !scope.isServerKey, live.created.userRecordName != scope.userRecordName {
            throw ServerError(.accessDenied, "record '\(recordName)' was created by another user; only its creator or a server-to-server key may change it")
        }
    }

    /// Errors that fail the whole modify request rather than one operation: the public database's
    /// ownership and sign-in refusals. Elsewhere (a shared zone's share, changed by a participant)
    /// ACCESS_DENIED stays the one operation's error.
    package static func failsWholeRequest(_ error: ServerError, in scope: DatabaseScope) -> Bool {
        scope.kind == .public && (error.code == .accessDenied || error.code == .authenticationRequired)
    }
}

/// The rules of zones.
package enum ZoneRules {
    /// The answer for a zone that does not exist (or no longer does).
    package static func notFound(_ zone: ZoneID) -> ServerError {
        var error = ServerError(.zoneNotFound, "zone '\(zone.zoneName)' does not exist")
        error.zoneID = zone
        return error
    }

    /// The public database has only `_defaultZone`, as in CloudKit.
    package static func checkCreation(_ scope: DatabaseScope) throws {
        guard scope.database == .private else {
            throw ServerError.badRequest("the \(scope.database.rawValue) database has only _defaultZone; zones cannot be created there")
        }
    }
}

/// The rules of sync tokens and change feeds.
package enum FeedRules {
    /// Where a zone's feed starts for `syncToken`, or which other zone row the token names (the
    /// caller then answers `CHANGE_TOKEN_EXPIRED` if that zone was deleted and recreated, else
    /// `BAD_REQUEST`).
    package enum ZoneStart {
        case since(Int64)
        case otherZone(rowID: Int64)
    }

    package static func zoneStart(_ syncToken: String?, storeID: String, zone: ZoneRow) throws -> ZoneStart {
        guard let syncToken else { return .since(0) }
        let token = try SyncToken(decoding: syncToken, expectedKind: .zone)
        guard token.storeID == storeID else { throw ServerError.badRequest("syncToken belongs to another server") }
        guard token.ownerID == zone.id else { return .otherZone(rowID: token.ownerID) }
        guard token.sequence >= zone.purgedSeq else {
            throw ServerError(.changeTokenExpired, "syncToken is older than the tombstone retention; fetch again without a token")
        }
        return .since(token.sequence)
    }

    package static func otherZoneError(recreated: Bool, zoneName: String) -> ServerError {
        recreated
            ? ServerError(.changeTokenExpired, "zone '\(zoneName)' was deleted and recreated; fetch again without a token")
            : ServerError.badRequest("syncToken belongs to another zone")
    }

    package static func databaseStart(_ syncToken: String?, storeID: String, databaseID: Int64, purgedSeq: Int64) throws -> Int64 {
        guard let syncToken else { return 0 }
        let token = try SyncToken(decoding: syncToken, expectedKind: .database)
        guard token.storeID == storeID, token.ownerID == databaseID else {
            throw ServerError.badRequest("syncToken belongs to another database")
        }
        guard token.sequence >= purgedSeq else {
            throw ServerError(.changeTokenExpired, "syncToken is older than the retention period; fetch again without a token")
        }
        return token.sequence
    }

    package static func zoneToken(storeID: String, zone: ZoneRow) -> String {
        SyncToken(kind: .zone, storeID: storeID, ownerID: zone.id, sequence: zone.seq).encoded
    }

    package static func token(_ kind: SyncToken.Kind, storeID: String, ownerID: Int64, sequence: Int64) -> String {
        SyncToken(kind: kind, storeID: storeID, ownerID: ownerID, sequence: sequence).encoded
    }
}

/// The rules of users, credentials and notification channels.
package enum CredentialRules {
    package static func validateUserName(_ name: String) throws {
        guard Names.isValidName(name), !name.contains(" ") else {
            throw ServerError.badRequest("user name must be 1-255 printable ASCII characters without spaces")
        }
    }

    package static func validateAPIEnvironment(_ apnsEnvironment: String) throws {
        guard apnsEnvironment == "development" || apnsEnvironment == "production" else {
            throw ServerError.badRequest("apnsEnvironment must be development or production")
        }
    }

    /// A well-formed API token, before any lookup.
    package static func isWellFormedAPIToken(_ apiToken: String) -> Bool {
        apiToken.utf8.count == 64 && apiToken.utf8.allSatisfy({ $0.isHexDigit })
    }

    package static func isPlausibleBearerToken(_ token: String) -> Bool { !token.isEmpty && token.utf8.count <= 512 }
}

/// The rules of `records/query`: filters and sorts evaluated over the candidate records, and the
/// continuation marker. The marker is a keyset position — the sort key (sorted fields, then the
/// record name) of the last record returned, tied to the zone — so a page starts strictly after
/// it: records created, changed or deleted elsewhere in the result while a client pages make no
/// other record skip or repeat (an offset would).
package enum QueryRules {
    /// A record's position in the query's order: its sorted values, then its name.
    struct SortKey {
        var values: [ComparableValue?]
        var recordName: String
    }

    /// The query's strict order over sort keys (missing values last when ascending).
    static func precedes(_ a: SortKey, _ b: SortKey, sorts: [QuerySort]) -> Bool {
        for (index, sort) in sorts.enumerated() {
            let left = index < a.values.count ? a.values[index] : nil
            let right = index < b.values.count ? b.values[index] : nil
            if left == right { continue }
            guard let left else { return !sort.ascending }
            guard let right else { return sort.ascending }
            return sort.ascending ? left < right : right < left
        }
        return a.recordName < b.recordName
    }

    static func encode(_ key: SortKey, zoneRowID: Int64) -> String {
        let values: [JSONValue] = key.values.map { value in
            switch value {
            case .number(let number)?: return .double(number)
            case .text(let text)?: return .string(text)
            case nil: return .null
            }
        }
        let json = JSONValue.array(values + [.string(key.recordName)]).serializedString()
        return OpaqueToken.encode("q2|\(zoneRowID)|\(json)")
    }

    static func decode(_ marker: String, zoneRowID: Int64, sortCount: Int) throws -> SortKey {
        let invalid = ServerError.badRequest("continuationMarker is not valid for this zone and query")
        let parts = OpaqueToken.decode(marker)?.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false) ?? []
        guard parts.count == 3, parts[0] == "q2", Int64(parts[1]) == zoneRowID,
            let items = (try? JSONValue.parse(Array(parts[2].utf8)))?.arrayValue, items.count == sortCount + 1,
            let name = items.last?.stringValue
        else { throw invalid }
        let values = try items.dropLast().map { item -> ComparableValue? in
            switch item {
            case .null: return nil
            case .int(let number): return .number(Double(number))
            case .double(let number): return .number(number)
            case .string(let text): return .text(text)
            default: throw invalid
            }
        }
        return SortKey(values: values, recordName: name)
    }

    static func value(_ field: QueryField, record: StoredRecord, values: [String: JSONValue]) -> JSONValue? {
        switch field {
        case .field(let name): return values[name]
        case .recordName: return .string(record.recordName)
        case .createdTimestamp: return .int(record.created.timestamp)
        case .modifiedTimestamp: return .int(record.modified.timestamp)
        }
    }

    package static func matches(_ filter: QueryFilter, record: StoredRecord, values: [String: JSONValue]) throws -> Bool {
        let actual = value(filter.field, record: record, values: values)
        let expected = ComparableValue(filter.value)
        func compare(_ test: (ComparableValue, ComparableValue) -> Bool) -> Bool {
            guard let actual, let left = ComparableValue(actual), let expected else { return false }
            return test(left, expected)
        }
        switch filter.comparator {
        case .equals: return compare(==)
        case .notEquals: return !compare(==)
        case .lessThan: return compare(<)
        case .lessThanOrEquals: return compare(<=)
        case .greaterThan: return compare(>)
        case .greaterThanOrEquals: return compare(>=)
        case .in, .notIn:
            guard let options = filter.value.arrayValue else { throw ServerError.badRequest("\(filter.comparator.rawValue) needs a list value") }
            let left = actual.flatMap(ComparableValue.init)
            let found = left != nil && options.contains { ComparableValue($0) == left }
            return filter.comparator == .in ? found : !found
        case .beginsWith:
            guard case .string(let prefix) = filter.value else { throw ServerError.badRequest("BEGINS_WITH needs a string value") }
            return actual?.stringValue?.hasPrefix(prefix) ?? false
        case .listContains:
            guard let list = actual?.arrayValue, let expected else { return false }
            return list.contains { ComparableValue($0) == expected }
        }
    }
}

package enum RandomToken {
    package static func hex(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let hexDigits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(count * 2)
        for _ in 0..<count {
            let byte = UInt8.random(in: 0...255, using: &generator)
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension UInt8 {
    var isHexDigit: Bool { (self >= 0x30 && self <= 0x39) || (self >= 0x41 && self <= 0x46) || (self >= 0x61 && self <= 0x66) }
}

