import RecordModel
import SQLiteDB

extension SQLiteRecordStore {
    package static let maximumOperations = StoreLimits.maximumOperations
    package static let maximumRecordBytes = StoreLimits.maximumRecordBytes

    /// A saved record's row: written over any row of its name, or (a create tried as new) only
    /// where the name is free.
    private static let recordRow = """
        records (zone_id, name, type, tag, seq, deleted, fields, parent, created_at, created_by,
            created_device, modified_at, modified_by, modified_device) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)
        """
    private static let insertOrReplace = "INSERT OR REPLACE INTO " + recordRow
    private static let insertIfNew = "INSERT INTO " + recordRow + " ON CONFLICT (zone_id, name) DO NOTHING"

    /// `beforeCommit` is handed the batch's results, final by then, just before a transaction that
    /// wrote something commits (`SQLiteStorage` starts writing the answer on another core while
    /// the commit writes and syncs the WAL).
    package func modifyRecords(_ scope: DatabaseScope, zone: ZoneID, operations: [RecordOperation], atomic: Bool,
                              deviceID: String?, beforeCommit: (([RecordOperationResult]) -> Void)? = nil) throws -> [RecordOperationResult]
    {
        try RecordRules.validateBatch(operations)
        let privateDatabaseID = scope.kind != .shared ? try self.databaseID(scope) : 0
        var databaseID = privateDatabaseID
        // `recipients`: other databases whose outboxes grew (public subscribers, share participants).
        let outcome: (results: [RecordOperationResult], transaction: ModifyTransaction?, recipients: Set<Int64>) = try database.writeSync { connection in
            try connection.execute("BEGIN IMMEDIATE")
            do {
                // Read under the write lock, so a concurrent request cannot add the same field first.
                let development = scope.environment == .development
                    ? try developmentSchemas.schema(container: scope.container, connection) : Schema()
                let enforcer = SchemaEnforcer(environment: scope.environment, production: productionSchema, development: development)
                // A shared zone's access is checked here, under the write lock: a participant
                // removed a moment ago cannot write.
                let addressed = try addressedZone(scope, zone, privateDatabaseID: privateDatabaseID, connection)
                let zoneRow = addressed.row
                databaseID = addressed.databaseID
                let ownerScope = addressed.access?.ownerScope(scope) ?? scope
                let leaving = scope.kind == .shared && operations.allSatisfy {
                    $0.recordName == ShareRules.recordName && $0.type.isDelete
                }
                if addressed.access?.permission == .readOnly, !leaving { throw ShareRules.readOnly(addressed.zoneID) }
                var transaction = ModifyTransaction(scope: ownerScope, zone: zoneRow, zoneID: addressed.zoneID, now: clock(),
                                                    deviceID: deviceID, sequence: zoneRow.seq, enforcer: enforcer, writer: scope.userRecordName)
                // A create is tried as an insert that yields to an existing row (`apply`): only the
                // other operations' records are read first.
                transaction.preloaded = try loadRecords(zoneRow.id, names: operations.compactMap { $0.type == .create ? nil : $0.recordName },
                                                        connection)
                transaction.indexedFields = try indexedFields(zone: zoneRow.id, connection)
                transaction.changes.reserveCapacity(operations.count)
                // Creates are planned on the other core while this thread inserts.
                let plans = PlansAhead.start(operations, zoneName: zoneRow.name, zoneID: addressed.zoneID, scope: ownerScope,
                                             enforcer: enforcer)
                defer { plans?.stop() }
                var results: [RecordOperationResult] = []
                var recipients = Set<Int64>()
                var savesShare = false
                results.reserveCapacity(operations.count)
                for (index, operation) in operations.enumerated() {
                    do {
                        if operation.recordName == ShareRules.recordName {
                            if scope.kind == .shared {
                                // Only the owner changes the share; a participant deletes it to leave.
                                guard operation.type.isDelete else { throw ServerError(.accessDenied, "only the zone's owner changes its share") }
                                try leaveShare(scope, zoneRowID: zoneRow.id, connection)
                                results.append(.deleted(recordName: ShareRules.recordName))
                            } else {
                                results.append(try saveShare(operation, &transaction, connection))
                                savesShare = true
                            }
                            continue
                        }
                        results.append(try apply(operation, plannedAhead: plans?.take(index), &transaction, connection))
                    } catch let error as ServerError where !AccessRules.failsWholeRequest(error, in: scope) {
                        results.append(.failed(error.with(recordName: operation.recordName)))
                    }
                }
                let failed = results.contains { if case .failed = $0 { return true } else { return false } }
                if atomic && failed {
                    try connection.execute("ROLLBACK")
                    return (results.map(RecordRules.atomicFailure), nil, [])
                }
                let wrote = transaction.sequence != zoneRow.seq
                if wrote {
                    let dbSeq = try bumpDatabaseSequence(databaseID, connection)
                    try connection.run("UPDATE zones SET seq = ?, db_seq = ? WHERE id = ?",
                                       [.int(transaction.sequence), .int(dbSeq), .int(zoneRow.id)])
                    try writeIndexCounts(transaction.indexCounts, zone: zoneRow.id, connection)
                    for (type, fields) in transaction.enforcer.additions where !fields.isEmpty {
                        try developmentSchemas.add(container: scope.container, recordType: type, fields: Array(fields), connection)
                    }
                    recipients = try recordNotifications(for: transaction.changes, zone: zoneRow.name, databaseID: databaseID,
                                                         scope: ownerScope, zoneChanged: false, connection)
                    recipients.formUnion(try notifyParticipants(transaction.changes, zone: zoneRow, ownerScope: ownerScope,
                                                                zoneChanged: false, connection))
                }
                // Only a batch saving the share: mapping every result copied each and freed the old array.
                if savesShare {
                    results = try results.map { result in
                        guard case .saved(let record) = result, record.recordName == ShareRules.recordName else { return result }
                        return .saved(try attachShare(record, zoneRowID: zoneRow.id, caller: scope.userRecordName, connection))
                    }
                }
                if wrote { beforeCommit?(results) }
                try connection.execute("COMMIT")
                // Still under the write lock: the next writer must see the fields this one added.
                for (type, fields) in transaction.enforcer.additions where !fields.isEmpty {
                    developmentSchemas.commit(container: scope.container, recordType: type, fields: Array(fields))
                }
                return (results, transaction, recipients)
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
        if let transaction = outcome.transaction, !transaction.changes.isEmpty {
            onCommit?(outcome.recipients.union([databaseID]))
        }
        return outcome.results
    }

    /// The records named, in one query (`ModifyTransaction.preloaded`).
    func loadRecords(_ zoneRowID: Int64, names: [String], _ connection: SQLiteConnection) throws -> [String: ExistingRecord?] {
        // A batch of creates names none: no query.
        guard !names.isEmpty else { return [:] }
        var records: [String: ExistingRecord?] = [:]
        records.reserveCapacity(names.count)
        for name in names { records[name] = .some(nil) }
        try connection.query(
            """
            SELECT type, tag, deleted, fields, parent, created_at, created_by, created_device, modified_at, modified_by, modified_device, name
            FROM records WHERE zone_id = ? AND name IN (SELECT value FROM json_each(?))
            """, [.int(zoneRowID), .text(JSONValue.array(names.map { .string($0) }).serializedString())]
        ) { row in
            records[row.text(11)] = ExistingRecord(row)
        }
        return records
    }

    func loadRecord(_ zoneRowID: Int64, _ name: String, _ connection: SQLiteConnection) throws -> ExistingRecord? {
        try connection.first(
            """
            SELECT type, tag, deleted, fields, parent, created_at, created_by, created_device, modified_at, modified_by, modified_device
            FROM records WHERE zone_id = ? AND name = ?
            """, [.int(zoneRowID), .text(name)]
        ) { row in ExistingRecord(row) }
    }

    /// `plannedAhead`: the operation's plan as a create of a new record (`PlansAhead`), if made.
    private func apply(_ operation: RecordOperation, plannedAhead: RecordRules.PreparedSave?, _ transaction: inout ModifyTransaction,
                       _ connection: SQLiteConnection) throws -> RecordOperationResult
    {
        let name = operation.recordName ?? ""
        try Names.validateRecordName(name)
        let zoneRowID = transaction.zone.id
        // A create of a name the batch did not preload is planned as new and inserted only if the
        // name is free: most creates are of new names, and the insert's own look-up then replaces
        // a read per record. A taken name (a live record, or a tombstone) is read and planned again.
        // (A refusal of the create as new is checked the same way: the existing record's answer
        // — "already exists", access — comes first, as when it was read before planning.)
        if operation.type == .create, transaction.preloaded.index(forKey: name) == nil {
            let refusal: ServerError?
            do {
                if let result = try save(operation, name: name, existing: nil, onlyIfNew: true, plannedAhead: plannedAhead,
                                         &transaction, connection) {
                    return result
                }
                refusal = nil
            } catch let error as ServerError {
                refusal = error
            }
            let existing = try loadRecord(zoneRowID, name, connection)
            if let refusal, existing == nil { throw refusal }
            return try save(operation, name: name, existing: existing, onlyIfNew: false, &transaction, connection)!
        }
        let existing = try transaction.preloaded.removeValue(forKey: name) ?? loadRecord(zoneRowID, name, connection)
        return try save(operation, name: name, existing: existing, onlyIfNew: false, &transaction, connection)!
    }

    /// Plans and writes one operation on `name` given its row before (`existing`, nil: none).
    /// With `onlyIfNew`, nothing is written and nil returned when a row of that name exists after all.
    /// `plannedAhead` is the plan of a create with no existing row, made on another thread with the
    /// batch's schema as it began (it teaches the schema no field, so the transaction's is kept).
    private func save(_ operation: RecordOperation, name: String, existing: ExistingRecord?, onlyIfNew: Bool,
                      plannedAhead: RecordRules.PreparedSave? = nil,
                      _ transaction: inout ModifyTransaction, _ connection: SQLiteConnection) throws -> RecordOperationResult?
    {
        let zoneRowID = transaction.zone.id
        let live = existing.flatMap { $0.deleted ? nil : $0 }
        let prepared: RecordRules.PreparedSave
        if let plannedAhead {
            prepared = plannedAhead
        } else {
            switch try RecordRules.plan(operation, name: name, live: live, zoneName: transaction.zone.name, zoneID: transaction.zoneID,
                                        scope: transaction.scope, enforcer: transaction.enforcer) {
            case .answered(let result):
                return result
            case .delete:
                try deleteCascading(name, &transaction, connection)
                return .deleted(recordName: name)
            case .save(let save):
                prepared = save
            }
        }
        for required in prepared.mustBeLive where try !isLive(zoneRowID, required.recordName, connection) {
            throw required.error
        }
        let record = prepared.record
        let fieldsJSON = prepared.fieldsJSON

        let sequence = transaction.sequence + 1
        let tag = RecordRules.changeTag(zoneRowID: zoneRowID, sequence: sequence)
        let modified = ChangeStamp(timestamp: transaction.now, userRecordName: transaction.writer, deviceID: transaction.deviceID)
        let created = live?.created ?? modified
        let values: [SQLValue] = [
            .int(zoneRowID), .text(name), .text(record.recordType), .text(tag), .int(sequence), .blob(fieldsJSON),
            record.parent.sqlValue, .int(created.timestamp), .text(created.userRecordName ?? ""), created.deviceID.sqlValue,
            .int(modified.timestamp), .text(modified.userRecordName ?? ""), modified.deviceID.sqlValue,
        ]
        let inserted = try connection.run(onlyIfNew ? Self.insertIfNew : Self.insertOrReplace, values)
        if onlyIfNew && inserted == 0 { return nil }
        transaction.sequence = sequence
        if plannedAhead == nil { transaction.enforcer = prepared.enforcer }
        if live != nil {
            try connection.run("DELETE FROM refs WHERE zone_id = ? AND source = ?", [.int(zoneRowID), .text(name)])
        }
        try reindex(name, old: live.map { transaction.indexEntries(type: $0.type, fieldsJSON: $0.fieldsJSON) },
                    new: transaction.indexEntries(type: record.recordType, fields: record.fields), &transaction, connection)
        for (_, reference) in prepared.references {
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
            try RecordRules.checkValidateBlockers(target: target, validatingSources: blockers, doomed: seen)
        }
        for name in doomed {
            transaction.preloaded.removeValue(forKey: name)
            guard let previous = try loadRecord(zoneRowID, name, connection), !previous.deleted else { continue }
            let sequence = transaction.nextSequence()
            try connection.run(
                """
                UPDATE records SET deleted = 1, fields = ?, tag = ?, seq = ?, modified_at = ?, modified_by = ?, modified_device = ?
                WHERE zone_id = ? AND name = ?
                """,
                [.blob(Array("{}".utf8)), .text(RecordRules.changeTag(zoneRowID: zoneRowID, sequence: sequence)), .int(sequence),
                 .int(transaction.now), .text(transaction.writer), transaction.deviceID.sqlValue,
                 .int(zoneRowID), .text(name)])
            try connection.run("DELETE FROM refs WHERE zone_id = ? AND source = ?", [.int(zoneRowID), .text(name)])
            try reindex(name, old: transaction.indexEntries(type: previous.type, fieldsJSON: previous.fieldsJSON), new: nil, &transaction, connection)
            transaction.changes.append(CommittedChange(kind: .deleted, recordName: name, recordType: previous.type,
                                                       record: previous.stored(name, zoneID: transaction.zoneID)))
        }
    }
}

extension ExistingRecord {
    /// Columns `type, tag, deleted, fields, parent, created_at, created_by, created_device,
    /// modified_at, modified_by, modified_device` of a `records` row.
    init(_ row: SQLiteStatement) {
        self.init(type: row.text(0), tag: row.text(1), deleted: row.int64(2) != 0, fieldsJSON: row.blob(3),
                  parent: row.optionalText(4),
                  created: ChangeStamp(timestamp: row.int64(5), userRecordName: row.text(6), deviceID: row.optionalText(7)),
                  modified: ChangeStamp(timestamp: row.int64(8), userRecordName: row.text(9), deviceID: row.optionalText(10)))
    }
}
