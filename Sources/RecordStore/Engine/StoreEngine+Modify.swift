import RecordModel

/// `records/modify`: one transaction per batch. Every operation is planned in memory against the
/// batch's records as they stand (read in one statement at the start), and the batch's rows are
/// written at the end in a bounded number of statements (`RecordWrites.flush`), however many
/// operations it carries. An operation that fails changes nothing in memory, so a non-atomic
/// batch needs no savepoints; an atomic one that failed rolls back (only share rows were written).
extension StoreEngine {
    /// Where the container's development schema is locked for a writer (PostgreSQL's advisory-lock namespace).
    package static let developmentSchemaLock: Int32 = 7_270_002

    package func modifyRecords(_ scope: DatabaseScope, zone: ZoneID, operations: [RecordOperation], atomic: Bool,
                               deviceID: String?) async throws -> [RecordOperationResult]
    {
        try RecordRules.validateBatch(operations)
        let privateDatabaseID = scope.kind != .shared ? try await databaseID(scope) : 0
        let now = clock()
        // The script may run on the writer's thread, outside the request's task: the share links
        // it writes keep the request's address.
        let linkBase = ShareRules.requestLinkBase
        func attempt(lockingSchemaFirst: Bool) async throws -> ModifyOutcome {
            // The push hub hears of the commit from the writer, while the answer goes back.
            try await driver.writeTransaction(size: operations.count, { connection in
                try await ShareRules.$requestLinkBase.withValue(linkBase) {
                    try await self.modifyScript(scope, zone: zone, operations: operations, atomic: atomic, deviceID: deviceID, now: now,
                                                privateDatabaseID: privateDatabaseID, lockingSchemaFirst: lockingSchemaFirst, connection)
                }
            }, committed: { self.committed($0.changed, webhookEvents: $0.webhookEvents) })
        }
        let outcome: ModifyOutcome
        do {
            outcome = try await attempt(lockingSchemaFirst: false)
        } catch is DevelopmentSchemaRace {
            // Another writer gave one of this batch's new fields another type meanwhile: plan the
            // batch again against the schema as it now stands, holding the schema's lock throughout.
            outcome = try await attempt(lockingSchemaFirst: true)
        }
        return outcome.results
    }

    /// A field this batch adds was added with another type by a writer that committed after the
    /// batch read the schema (PostgreSQL, several writers of one container at once).
    private struct DevelopmentSchemaRace: ScriptSignal {}

    private struct ModifyOutcome: Sendable {
        var results: [RecordOperationResult]
        /// The databases whose rows or outboxes the batch changed (empty: it wrote nothing).
        var changed: Set<Int64>
        /// Whether the batch queued webhook events.
        var webhookEvents = false
    }

    private func modifyScript(_ scope: DatabaseScope, zone: ZoneID, operations: [RecordOperation], atomic: Bool, deviceID: String?,
                              now: Int64, privateDatabaseID: Int64, lockingSchemaFirst: Bool, _ connection: any StoreConnection)
        async throws -> TransactionOutcome<ModifyOutcome>
    {
        // The database's row, then the zone's: writers of one database take turns, so a zone's
        // sequence numbers commit in the order they are taken. A shared zone's access is checked
        // under its owner's lock: a participant removed a moment ago cannot write.
        let addressed = try await addressedZone(scope, zone, privateDatabaseID: privateDatabaseID, forUpdate: true, connection)
        let zoneRow = addressed.row
        let databaseID = addressed.databaseID
        let ownerScope = addressed.access?.ownerScope(scope) ?? scope
        let leaving = scope.kind == .shared && operations.allSatisfy { $0.recordName == ShareRules.recordName && $0.type.isDelete }
        if addressed.access?.permission == .readOnly, !leaving { throw ShareRules.readOnly(addressed.zoneID) }
        let enforcer = SchemaEnforcer(environment: scope.environment, production: productionSchema,
                                      development: try await developmentSchema(scope, locking: lockingSchemaFirst, connection))
        var writes = RecordWrites(ModifyTransaction(scope: ownerScope, zone: zoneRow, zoneID: addressed.zoneID, now: now, deviceID: deviceID,
                                                    sequence: zoneRow.seq, enforcer: enforcer, writer: scope.userRecordName))
        try await writes.load(operations.compactMap(\.recordName), connection)
        try await writes.loadReferences(to: operations.filter(\.type.isDelete).compactMap(\.recordName), connection)
        writes.transaction.indexedFields = try await indexedFields(zone: zoneRow.id, connection)
        var results: [RecordOperationResult] = []
        results.reserveCapacity(operations.count)
        var savesShare = false
        for operation in operations {
            do {
                if operation.recordName == ShareRules.recordName {
                    if scope.kind == .shared {
                        // Only the owner changes the share; a participant deletes it to leave.
                        guard operation.type.isDelete else { throw ServerError(.accessDenied, "only the zone's owner changes its share") }
                        try await leaveShare(scope, zoneRowID: zoneRow.id, connection)
                        results.append(.deleted(recordName: ShareRules.recordName))
                    } else {
                        results.append(try await saveShare(operation, &writes, connection))
                        savesShare = true
                    }
                    continue
                }
                results.append(try await writes.apply(operation, connection))
            } catch let error as ServerError where !AccessRules.failsWholeRequest(error, in: scope) {
                results.append(.failed(error.with(recordName: operation.recordName)))
            }
        }
        let failed = results.contains { if case .failed = $0 { return true } else { return false } }
        if atomic && failed { return .rollback(ModifyOutcome(results: results.map(RecordRules.atomicFailure), changed: [])) }
        var changed = Set<Int64>()
        var webhookEvents = false
        let transaction = writes.transaction
        if transaction.sequence != zoneRow.seq {
            try await writes.flush(connection)
            let dbSeq = try await bumpDatabaseSequence(databaseID, connection)
            try await connection.execute("UPDATE zones SET seq = ?, db_seq = ? WHERE id = ?",
                                         [.int(transaction.sequence), .int(dbSeq), .int(zoneRow.id)])
            try await addDevelopmentFields(transaction.enforcer.additions, container: scope.container,
                                           schemaLocked: lockingSchemaFirst, connection)
            changed = [databaseID]
            changed.formUnion(try await recordNotifications(for: transaction.changes, zone: zoneRow.name, databaseID: databaseID,
                                                            scope: ownerScope, zoneChanged: false, connection))
            try await driver.announceCommit(of: databaseID, connection)
            changed.formUnion(try await notifyParticipants(transaction.changes, zone: zoneRow, ownerScope: ownerScope, zoneChanged: false,
                                                           connection))
            try await keepUndeliveredVersions(writes.superseded, zone: zoneRow, connection)
            webhookEvents = true
        }
        if savesShare {
            for index in results.indices {
                guard case .saved(let record) = results[index], record.recordName == ShareRules.recordName else { continue }
                results[index] = .saved(try await attachShare(record, zoneRowID: zoneRow.id, caller: scope.userRecordName, connection))
            }
        }
        return .commit(ModifyOutcome(results: results, changed: changed, webhookEvents: webhookEvents))
    }

    // MARK: Schema

    /// The container's development schema (empty in production), read in the writer's transaction.
    /// Writers of one container take turns on the schema (PostgreSQL's advisory lock) only to add
    /// to it, so two cannot add one field with two types, yet batches that add nothing, nearly all
    /// of them, never wait for each other: `locking` takes the turn from the start.
    func developmentSchema(_ scope: DatabaseScope, locking: Bool, _ connection: any StoreConnection) async throws -> Schema {
        guard scope.environment == .development else { return Schema() }
        if locking { try await lockDevelopmentSchema(container: scope.container, connection) }
        return try await readDevelopmentSchema(container: scope.container, connection)
    }

    private func readDevelopmentSchema(container: String, _ connection: any StoreConnection) async throws -> Schema {
        var schema = Schema()
        for row in try await connection.rows("SELECT record_type, field, field_type FROM dev_schema WHERE container = ?", [.text(container)]) {
            guard let type = FieldType(wireName: row.text(2)) else { continue }
            schema.recordTypes[row.text(0), default: RecordTypeSchema(name: row.text(0))].fields[row.text(1)] = FieldSchema(name: row.text(1), type: type)
        }
        return schema
    }

    /// Waits for the container's schema turn (held to the transaction's end); a no-op where one
    /// writer writes at a time (SQLite).
    private func lockDevelopmentSchema(container: String, _ connection: any StoreConnection) async throws {
        if let lock = connection.dialect.transactionLock(namespace: Self.developmentSchemaLock) {
            try await connection.execute(lock, [.text(container)])
        }
    }

    /// Records the types and fields a development batch added, in one statement. Unless the batch
    /// held the schema's turn from the start, it takes it now and checks that no writer added one
    /// of these fields with another type since the batch read the schema (`DevelopmentSchemaRace`).
    private func addDevelopmentFields(_ additions: [String: [String: FieldType]], container: String, schemaLocked: Bool,
                                      _ connection: any StoreConnection) async throws
    {
        let rows: [[SQLValue]] = additions.flatMap { type, fields in
            fields.map { field, fieldType in [.text(container), .text(type), .text(field), .text(fieldType.wireName)] }
        }
        guard !rows.isEmpty else { return }
        if !schemaLocked, connection.dialect.transactionLock(namespace: Self.developmentSchemaLock) != nil {
            try await lockDevelopmentSchema(container: container, connection)
            let current = try await readDevelopmentSchema(container: container, connection)
            for (type, fields) in additions {
                for (field, fieldType) in fields {
                    if let committed = current.fieldType(recordType: type, field: field), committed != fieldType { throw DevelopmentSchemaRace() }
                }
            }
        }
        try await connection.insertRows(into: "dev_schema", columns: [StoreColumn("container", .text), StoreColumn("record_type", .text),
                                                                      StoreColumn("field", .text), StoreColumn("field_type", .text)],
                                        rows: rows, suffix: "ON CONFLICT DO NOTHING")
    }

    /// The zone's indexed fields by record type (`query_fields`).
    func indexedFields(zone zoneRowID: Int64, _ connection: any StoreConnection) async throws -> [String: Set<String>] {
        var fields: [String: Set<String>] = [:]
        for row in try await connection.rows("SELECT record_type, field FROM query_fields WHERE zone_id = ?", [.int(zoneRowID)]) {
            fields[row.text(0), default: []].insert(row.text(1))
        }
        return fields
    }

    // MARK: The share record

    /// The owner saves or deletes the share record: the record (its title) as any record's row,
    /// the share and participant rows at once.
    func saveShare(_ operation: RecordOperation, _ writes: inout RecordWrites, _ connection: any StoreConnection) async throws
        -> RecordOperationResult
    {
        let name = ShareRules.recordName
        let zoneRowID = writes.transaction.zone.id
        let zoneID = writes.transaction.zoneID
        guard writes.transaction.zone.name != ZoneID.defaultZoneName else {
            throw ServerError.badRequest("_defaultZone cannot be shared; share a zone of your own")
        }
        let live = try await writes.live(name, connection)
        func conflict(_ live: ExistingRecord) -> ServerError {
            var error = ServerError(.conflict, "record '\(name)' was changed since the change tag sent")
            error.serverRecord = live.stored(name, zoneID: zoneID).json()
            return error
        }
        if operation.type.isDelete {
            guard let live else {
                if operation.type == .forceDelete { return .deleted(recordName: name) }
                throw ServerError(.notFound, "record '\(name)' does not exist")
            }
            if operation.type == .delete, operation.record["recordChangeTag"]?.stringValue != live.tag { throw conflict(live) }
            try await writes.deleteCascading(name, connection)
            try await deleteShareRows(zoneRowID: zoneRowID, connection)
            return .deleted(recordName: name)
        }
        switch operation.type {
        case .create where live != nil: throw ServerError(.exists, "record '\(name)' already exists")
        case .update, .replace:
            guard let live else { throw ServerError(.notFound, "record '\(name)' does not exist") }
            guard operation.record["recordChangeTag"]?.stringValue == live.tag else { throw conflict(live) }
        default: break
        }
        let (requested, fieldsJSON) = try ShareRules.parseShareRecord(operation.record, isNew: live == nil)
        guard let owner = try await user(id: writes.transaction.scope.userID, connection) else { throw ServerError(.internalError, "owner missing") }
        if live == nil {
            try await connection.execute("INSERT INTO shares (zone_id, short_guid, owner_user_id) VALUES (?, ?, ?) "
                                            + connection.dialect.upsert(conflict: ["zone_id"], update: ["short_guid", "owner_user_id"]),
                                         [.int(zoneRowID), .text(ShareRules.newShortGUID()), .int(owner.id)])
        }
        if let requested { try await writeParticipants(requested, owner: owner, zoneRowID: zoneRowID, connection) }
        let fields = fieldsJSON ?? (operation.type.replacesFields ? Array("{}".utf8) : (live?.fieldsJSON ?? Array("{}".utf8)))
        return .saved(writes.save(name, type: ShareRules.recordType, fieldsJSON: fields, parent: nil, live: live, references: []))
    }
}
