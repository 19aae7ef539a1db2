import RecordModel
import SQLiteDB

/// How a reference's action is stored in the `refs` table.
enum StoredReferenceAction: Int64 {
    case deleteSelf = 1, validate = 2
}

/// A change made by a modify transaction, for notifications.
struct CommittedChange {
    enum Kind { case created, updated, deleted }
    var kind: Kind
    var recordName: String
    var recordType: String
    /// The record after a save; its last state before a deletion.
    var record: StoredRecord
}

/// The state of one modify transaction: the zone's advancing change sequence and what changed.
struct ModifyTransaction {
    let scope: DatabaseScope
    let zone: SQLiteRecordStore.ZoneRow
    let zoneID: ZoneID
    let now: Int64
    let deviceID: String?
    var sequence: Int64
    var changes: [CommittedChange] = []
    var enforcer: SchemaEnforcer

    mutating func nextSequence() -> Int64 {
        sequence += 1
        return sequence
    }
}

/// A record row as the modify path needs it.
struct ExistingRecord {
    var type: String
    var tag: String
    var deleted: Bool
    var fieldsJSON: [UInt8]
    var parent: String?
    var created: ChangeStamp
    var modified: ChangeStamp
}

extension SQLiteRecordStore {
    public static let maximumOperations = 400
    public static let maximumRecordBytes = 1_000_000

    public func modifyRecords(_ scope: DatabaseScope, zone: ZoneID, operations: [RecordOperation], atomic: Bool,
                              deviceID: String?) throws -> [RecordOperationResult]
    {
        guard operations.count <= SQLiteRecordStore.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(SQLiteRecordStore.maximumOperations) operations per request, got \(operations.count)")
        }
        var names = Set<String>()
        for operation in operations {
            guard let name = operation.record["recordName"]?.stringValue else {
                throw ServerError.badRequest("every operation needs a record with a string recordName")
            }
            guard names.insert(name).inserted else {
                throw ServerError.badRequest("record '\(name)' appears in more than one operation")
            }
        }
        let databaseID = try self.databaseID(scope)
        let outcome: (results: [RecordOperationResult], transaction: ModifyTransaction?) = try database.writeSync { connection in
            try connection.execute("BEGIN IMMEDIATE")
            do {
                // Read under the write lock, so a concurrent request cannot add the same field first.
                let development = scope.environment == .development
                    ? try developmentSchemas.schema(container: scope.container, connection) : Schema()
                let enforcer = SchemaEnforcer(environment: scope.environment, production: productionSchema, development: development)
                let zoneRow = try requireZone(databaseID, zone, connection)
                var transaction = ModifyTransaction(scope: scope, zone: zoneRow, zoneID: zoneID(zoneRow.name, scope), now: clock(),
                                                    deviceID: deviceID, sequence: zoneRow.seq, enforcer: enforcer)
                var results: [RecordOperationResult] = []
                results.reserveCapacity(operations.count)
                for operation in operations {
                    do {
                        results.append(try apply(operation, &transaction, connection))
                    } catch let error as ServerError {
                        results.append(.failed(error.with(recordName: operation.record["recordName"]?.stringValue)))
                    }
                }
                let failed = results.contains { if case .failed = $0 { return true } else { return false } }
                if atomic && failed {
                    try connection.execute("ROLLBACK")
                    return (results.map(SQLiteRecordStore.atomicFailure), nil)
                }
                if transaction.sequence != zoneRow.seq {
                    let dbSeq = try bumpDatabaseSequence(databaseID, connection)
                    try connection.run("UPDATE zones SET seq = ?, db_seq = ? WHERE id = ?",
                                       [.int(transaction.sequence), .int(dbSeq), .int(zoneRow.id)])
                    for (type, fields) in transaction.enforcer.additions where !fields.isEmpty {
                        try developmentSchemas.add(container: scope.container, recordType: type, fields: Array(fields), connection)
                    }
                    try recordNotifications(for: transaction.changes, zone: zoneRow.name, databaseID: databaseID,
                                            scope: scope, zoneChanged: false, connection)
                }
                try connection.execute("COMMIT")
                // Still under the write lock: the next writer must see the fields this one added.
                for (type, fields) in transaction.enforcer.additions where !fields.isEmpty {
                    developmentSchemas.commit(container: scope.container, recordType: type, fields: Array(fields))
                }
                return (results, transaction)
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
        if let transaction = outcome.transaction, !transaction.changes.isEmpty {
            onCommit?([databaseID])
        }
        return outcome.results
    }

    /// In a failed atomic batch, every operation that would have succeeded reports `ATOMIC_ERROR`.
    static func atomicFailure(_ result: RecordOperationResult) -> RecordOperationResult {
        switch result {
        case .failed: return result
        case .saved(let record):
            return .failed(ServerError(.atomicError, "another operation of this atomic batch failed").with(recordName: record.recordName))
        case .deleted(let name):
            return .failed(ServerError(.atomicError, "another operation of this atomic batch failed").with(recordName: name))
        }
    }

    func loadRecord(_ zoneRowID: Int64, _ name: String, _ connection: SQLiteConnection) throws -> ExistingRecord? {
        try connection.first(
            """
            SELECT type, tag, deleted, fields, parent, created_at, created_by, created_device, modified_at, modified_by, modified_device
            FROM records WHERE zone_id = ? AND name = ?
            """, [.int(zoneRowID), .text(name)]
        ) { row in
            ExistingRecord(type: row.text(0), tag: row.text(1), deleted: row.int64(2) != 0, fieldsJSON: row.blob(3),
                           parent: row.optionalText(4),
                           created: ChangeStamp(timestamp: row.int64(5), userRecordName: row.text(6), deviceID: row.optionalText(7)),
                           modified: ChangeStamp(timestamp: row.int64(8), userRecordName: row.text(9), deviceID: row.optionalText(10)))
        }
    }

    func storedRecord(_ name: String, _ existing: ExistingRecord, zoneID: ZoneID) -> StoredRecord {
        StoredRecord(recordName: name, recordType: existing.type, changeTag: existing.tag, fieldsJSON: existing.fieldsJSON,
                     parent: existing.parent, created: existing.created, modified: existing.modified, zoneID: zoneID)
    }

    private func apply(_ operation: RecordOperation, _ transaction: inout ModifyTransaction,
                       _ connection: SQLiteConnection) throws -> RecordOperationResult
    {
        let name = operation.record["recordName"]?.stringValue ?? ""
        try Names.validateRecordName(name)
        let zoneRowID = transaction.zone.id
        let existing = try loadRecord(zoneRowID, name, connection)
        let live = existing.flatMap { $0.deleted ? nil : $0 }

        let tagJSON = operation.record["recordChangeTag"]
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
                error.serverRecord = storedRecord(name, live, zoneID: transaction.zoneID).json()
                throw error
            }
        }

        if operation.type.isDelete {
            guard live != nil else {
                if operation.type == .forceDelete { return .deleted(recordName: name) }
                throw ServerError(.notFound, "record '\(name)' does not exist")
            }
            try conflictIfStale()
            try deleteCascading(name, &transaction, connection)
            return .deleted(recordName: name)
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

        var record = try Record(requestJSON: operation.record) { type, field in
            transaction.enforcer.declaredType(recordType: type.isEmpty ? (live?.type ?? "") : type, field: field)
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
            if operation.record["parent"] == nil { record.parent = live.parent }
        }
        // An unchanged parent is not checked again: parents do not cascade, so it may have been
        // deleted since, and that must not make the child unchangeable.
        let parentIsNew = live == nil || live?.parent != record.parent
        var enforcer = transaction.enforcer
        try enforcer.check(record)
        let fieldsJSON = record.fieldsJSONBytes()
        guard fieldsJSON.count <= SQLiteRecordStore.maximumRecordBytes else {
            throw ServerError(.limitExceeded, "record '\(name)' is \(fieldsJSON.count) bytes; the limit is \(SQLiteRecordStore.maximumRecordBytes)")
        }
        for (field, reference) in record.references where reference.zoneName.map({ $0 != transaction.zone.name }) ?? false {
            throw ServerError.badRequest("field '\(field)' references a record in zone '\(reference.zoneName ?? "")'; a reference points to a record in the same zone")
        }
        let references = record.references.filter { $0.reference.action != .none }
        for (field, reference) in references where reference.recordName != name {
            guard try isLive(zoneRowID, reference.recordName, connection) else {
                throw ServerError(.validatingReferenceError,
                                  "field '\(field)' references '\(reference.recordName)', which does not exist")
            }
        }
        if parentIsNew, let parent = record.parent, parent != name, try !isLive(zoneRowID, parent, connection) {
            throw ServerError(.validatingReferenceError, "parent '\(parent)' does not exist")
        }
        transaction.enforcer = enforcer

        let sequence = transaction.nextSequence()
        let tag = SQLiteRecordStore.changeTag(zoneRowID: zoneRowID, sequence: sequence)
        let modified = ChangeStamp(timestamp: transaction.now, userRecordName: transaction.scope.userRecordName, deviceID: transaction.deviceID)
        let created = live?.created ?? modified
        try connection.run(
            """
            INSERT OR REPLACE INTO records (zone_id, name, type, tag, seq, deleted, fields, parent, created_at, created_by,
                created_device, modified_at, modified_by, modified_device) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.int(zoneRowID), .text(name), .text(record.recordType), .text(tag), .int(sequence), .blob(fieldsJSON),
             record.parent.sqlValue, .int(created.timestamp), .text(created.userRecordName ?? ""), created.deviceID.sqlValue,
             .int(modified.timestamp), .text(modified.userRecordName ?? ""), modified.deviceID.sqlValue])
        if live != nil {
            try connection.run("DELETE FROM refs WHERE zone_id = ? AND source = ?", [.int(zoneRowID), .text(name)])
        }
        for (_, reference) in references {
            let action: StoredReferenceAction = reference.action == .deleteSelf ? .deleteSelf : .validate
            try connection.run("INSERT OR IGNORE INTO refs (zone_id, target, source, action) VALUES (?, ?, ?, ?)",
                               [.int(zoneRowID), .text(reference.recordName), .text(name), .int(action.rawValue)])
        }
        let stored = StoredRecord(recordName: name, recordType: record.recordType, changeTag: tag, fieldsJSON: fieldsJSON,
                                  parent: record.parent, created: created, modified: modified, zoneID: transaction.zoneID)
        transaction.changes.append(CommittedChange(kind: live == nil ? .created : .updated, recordName: name,
                                                   recordType: record.recordType, record: stored))
        return .saved(stored)
    }

    static func changeTag(zoneRowID: Int64, sequence: Int64) -> String {
        String(zoneRowID, radix: 36) + "-" + String(sequence, radix: 36)
    }

    func isLive(_ zoneRowID: Int64, _ name: String, _ connection: SQLiteConnection) throws -> Bool {
        try connection.scalarInt("SELECT 1 FROM records WHERE zone_id = ? AND name = ? AND deleted = 0", [.int(zoneRowID), .text(name)]) != nil
    }

    /// Deletes `root` and, recursively, every record holding a `DELETE_SELF` reference to a deleted
    /// one — all or nothing: a live `VALIDATE` reference from outside the set fails the whole delete.
    func deleteCascading(_ root: String, _ transaction: inout ModifyTransaction, _ connection: SQLiteConnection) throws {
        let zoneRowID = transaction.zone.id
        var doomed = [root]
        var seen: Set<String> = [root]
        var index = 0
        while index < doomed.count {
            let target = doomed[index]
            index += 1
            try connection.query("SELECT source FROM refs WHERE zone_id = ? AND target = ? AND action = ?",
                                 [.int(zoneRowID), .text(target), .int(StoredReferenceAction.deleteSelf.rawValue)]) { row in
                let source = row.text(0)
                if seen.insert(source).inserted { doomed.append(source) }
            }
        }
        for target in doomed {
            let blockers = try connection.map("SELECT source FROM refs WHERE zone_id = ? AND target = ? AND action = ?",
                                              [.int(zoneRowID), .text(target), .int(StoredReferenceAction.validate.rawValue)]) { $0.text(0) }
            if let blocker = blockers.first(where: { !seen.contains($0) }) {
                throw ServerError(.validatingReferenceError, "record '\(target)' is referenced by '\(blocker)' with VALIDATE")
            }
        }
        for name in doomed {
            guard let previous = try loadRecord(zoneRowID, name, connection), !previous.deleted else { continue }
            let sequence = transaction.nextSequence()
            try connection.run(
                """
                UPDATE records SET deleted = 1, fields = ?, tag = ?, seq = ?, modified_at = ?, modified_by = ?, modified_device = ?
                WHERE zone_id = ? AND name = ?
                """,
                [.blob(Array("{}".utf8)), .text(SQLiteRecordStore.changeTag(zoneRowID: zoneRowID, sequence: sequence)), .int(sequence),
                 .int(transaction.now), .text(transaction.scope.userRecordName), transaction.deviceID.sqlValue,
                 .int(zoneRowID), .text(name)])
            try connection.run("DELETE FROM refs WHERE zone_id = ? AND source = ?", [.int(zoneRowID), .text(name)])
            transaction.changes.append(CommittedChange(kind: .deleted, recordName: name, recordType: previous.type,
                                                       record: storedRecord(name, previous, zoneID: transaction.zoneID)))
        }
    }
}
