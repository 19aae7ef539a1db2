import Foundation
import PostgresNIO
import RecordModel
import RecordStore

extension PostgresRecordStore {
    package func modifyRecords(_ scope: DatabaseScope, zone: ZoneID, operations: [RecordOperation], atomic: Bool,
                              deviceID: String?) async throws -> [RecordOperationResult]
    {
        try RecordRules.validateBatch(operations)
        let privateDatabaseID = scope.kind != .shared ? try await databaseID(scope) : 0
        let now = clock()
        // An atomic batch runs first without a savepoint per operation (two round trips fewer a
        // record): any failure rolls the whole batch back anyway. If an operation fails, that
        // attempt is rolled back and the batch runs again with savepoints, so every operation's
        // own error is reported exactly as before.
        for savepoints in atomic ? [false, true] : [true] {
            let attempt: ([RecordOperationResult], Bool, Set<Int64>)? = try await transaction { connection in
                // Database row, then zone row: every writer of this database waits here, so the zone's
                // sequence numbers commit in the order they are taken. A shared zone's access is
                // checked after its owner's database is locked (as share changes lock it).
                let addressed = try await self.addressedZone(scope, zone, privateDatabaseID: privateDatabaseID, forUpdate: true, connection)
                let zoneRow = addressed.row
                let databaseID = addressed.databaseID
                let ownerScope = addressed.access?.ownerScope(scope) ?? scope
                let leaving = scope.kind == .shared && operations.allSatisfy {
                    $0.recordName == ShareRules.recordName && $0.type.isDelete
                }
                if addressed.access?.permission == .readOnly, !leaving { throw ShareRules.readOnly(addressed.zoneID) }
                var development = Schema()
                if scope.environment == .development {
                    // The development schema is the container's, shared by its users' databases:
                    // writers of one container take turns, so two cannot add one field with two types.
                    try await connection.query("SELECT pg_advisory_xact_lock(7270002, hashtext(\(scope.container)))", logger: self.logger)
                    development = try await self.developmentSchema(container: scope.container, connection)
                }
                let enforcer = SchemaEnforcer(environment: scope.environment, production: self.productionSchema, development: development)
                var modify = ModifyTransaction(scope: ownerScope, zone: zoneRow, zoneID: addressed.zoneID, now: now,
                                            deviceID: deviceID, sequence: zoneRow.seq, enforcer: enforcer, writer: scope.userRecordName)
                modify.preloaded = try await self.loadRecords(
                    zoneRow.id, names: operations.compactMap { $0.recordName }, connection)
                modify.indexedFields = try await self.indexedFields(zone: zoneRow.id, connection)
                var results: [RecordOperationResult] = []
                results.reserveCapacity(operations.count)
                for operation in operations {
                    // A failed operation of a non-atomic batch must not undo the others: each runs in
                    // a savepoint.
                    if savepoints { try await connection.query("SAVEPOINT operation", logger: self.logger) }
                    let before = modify
                    do {
                        if operation.recordName == ShareRules.recordName {
                            if scope.kind == .shared {
                                // Only the owner changes the share; a participant deletes it to leave.
                                guard operation.type.isDelete else { throw ServerError(.accessDenied, "only the zone's owner changes its share") }
                                try await self.leaveShare(scope, zoneRowID: zoneRow.id, connection)
                                results.append(.deleted(recordName: ShareRules.recordName))
                            } else {
                                results.append(try await self.saveShare(operation, &modify, connection))
                            }
                        } else {
                            results.append(try await self.apply(operation, &modify, connection))
                        }
                        if savepoints { try await connection.query("RELEASE SAVEPOINT operation", logger: self.logger) }
                    } catch let error as ServerError where !AccessRules.failsWholeRequest(error, in: scope) {
                        guard savepoints else { return .rollback(nil) }
                        try await connection.query("ROLLBACK TO SAVEPOINT operation", logger: self.logger)
                        modify = before
                        results.append(.failed(error.with(recordName: operation.recordName)))
                    }
                }
                let failed = results.contains { if case .failed = $0 { return true } else { return false } }
                if atomic && failed { return .rollback((results.map(RecordRules.atomicFailure), false, [])) }
                // The databases whose outboxes grew: this one, public subscribers', share participants'.
                var touched: Set<Int64> = [databaseID]
                if modify.sequence != zoneRow.seq {
                    let dbSeq = try await self.bumpDatabaseSequence(databaseID, connection)
                    try await connection.query("UPDATE zones SET seq = \(modify.sequence), db_seq = \(dbSeq) WHERE id = \(zoneRow.id)",
                                               logger: self.logger)
                    try await self.writeIndex(modify, connection)
                    for (type, fields) in modify.enforcer.additions where !fields.isEmpty {
                        for (field, fieldType) in fields {
                            try await connection.query(
                                """
                                INSERT INTO dev_schema (container, record_type, field, field_type)
                                VALUES (\(scope.container), \(type), \(field), \(fieldType.wireName)) ON CONFLICT DO NOTHING
                                """, logger: self.logger)
                        }
                    }
                    touched.formUnion(try await self.recordNotifications(for: modify.changes, zone: zoneRow.name, databaseID: databaseID,
                                                                         scope: ownerScope, zoneChanged: false, connection))
                    try await self.notifyCommit(databaseID, connection)
                    touched.formUnion(try await self.notifyParticipants(modify.changes, zone: zoneRow, ownerScope: ownerScope, zoneChanged: false,
                                                                        connection))
                }
                var answered: [RecordOperationResult] = []
                for result in results {
                    guard case .saved(let record) = result, record.recordName == ShareRules.recordName else {
                        answered.append(result)
                        continue
                    }
                    answered.append(.saved(try await self.attachShare(record, zoneRowID: zoneRow.id, caller: scope.userRecordName, connection)))
                }
                return .commit((answered, !modify.changes.isEmpty, touched))
            }
            guard let (results, changed, touched) = attempt else { continue }
            if changed { for databaseID in touched { committed(databaseID) } }
            return results
        }
        throw ServerError(.internalError, "an atomic batch failed without an operation's error")
    }

    /// The container's development schema, read in the request's transaction (no cache: another
    /// daemon may have added fields).
    func developmentSchema(container: String, _ connection: PostgresConnection) async throws -> Schema {
        var schema = Schema()
        for row in try await connection.query(
            "SELECT record_type, field, field_type FROM dev_schema WHERE container = \(container)", logger: logger
        ).collect() {
            let (typeName, fieldName, wireType) = try row.decode((String, String, String).self)
            guard let type = FieldType(wireName: wireType) else { continue }
            schema.recordTypes[typeName, default: RecordTypeSchema(name: typeName)].fields[fieldName] = FieldSchema(name: fieldName, type: type)
        }
        return schema
    }

    func loadRecord(_ zoneRowID: Int64, _ name: String, _ connection: PostgresConnection) async throws -> ExistingRecord? {
        guard let row = try await connection.query(
            """
            SELECT type, tag, deleted, fields, parent, created_at, created_by, created_device, modified_at, modified_by, modified_device
            FROM records WHERE zone_id = \(zoneRowID) AND name = \(name)
            """, logger: logger
        ).collect().first else { return nil }
        return try PostgresRecordStore.existingRecord(row)
    }

    /// The records named, in one round trip (`ModifyTransaction.preloaded`).
    func loadRecords(_ zoneRowID: Int64, names: [String], _ connection: PostgresConnection) async throws -> [String: ExistingRecord?] {
        var records: [String: ExistingRecord?] = [:]
        records.reserveCapacity(names.count)
        for name in names { records[name] = .some(nil) }
        for try await row in try await connection.query(
            """
            SELECT type, tag, deleted, fields, parent, created_at, created_by, created_device, modified_at, modified_by, modified_device, name
            FROM records WHERE zone_id = \(zoneRowID) AND name = ANY(\(names))
            """, logger: logger
        ) {
            records[try row.makeRandomAccess()[11].decode(String.self)] = try PostgresRecordStore.existingRecord(row)
        }
        return records
    }

    /// Columns `type, tag, deleted, fields, parent, created_at, created_by, created_device,
    /// modified_at, modified_by, modified_device` of a `records` row.
    static func existingRecord(_ row: PostgresRow) throws -> ExistingRecord {
        let (type, tag, deleted, fields, parent, createdAt, createdBy, createdDevice) =
            try row.decode((String, String, Int64, String, String?, Int64, String, String?).self)
        let columns = row.makeRandomAccess()
        return ExistingRecord(type: type, tag: tag, deleted: deleted != 0, fieldsJSON: Array(fields.utf8), parent: parent,
                              created: ChangeStamp(timestamp: createdAt, userRecordName: createdBy, deviceID: createdDevice),
                              modified: ChangeStamp(timestamp: try columns[8].decode(Int64.self), userRecordName: try columns[9].decode(String.self),
                                                    deviceID: try columns[10].decode(String?.self)))
    }

    func isLive(_ zoneRowID: Int64, _ name: String, _ connection: PostgresConnection) async throws -> Bool {
        try await !connection.query("SELECT 1 FROM records WHERE zone_id = \(zoneRowID) AND name = \(name) AND deleted = 0", logger: logger)
            .collect().isEmpty
    }

    private func apply(_ operation: RecordOperation, _ modify: inout ModifyTransaction, _ connection: PostgresConnection) async throws
        -> RecordOperationResult
    {
        let name = operation.recordName ?? ""
        try Names.validateRecordName(name)
        let zoneRowID = modify.zone.id
        let existing: ExistingRecord?
        if let preloaded = modify.preloaded.removeValue(forKey: name) {
            existing = preloaded
        } else {
            existing = try await loadRecord(zoneRowID, name, connection)
        }
        let live = existing.flatMap { $0.deleted ? nil : $0 }
        let prepared: RecordRules.PreparedSave
        switch try RecordRules.plan(operation, name: name, live: live, zoneName: modify.zone.name, zoneID: modify.zoneID,
                                    scope: modify.scope, enforcer: modify.enforcer) {
        case .answered(let result):
            return result
        case .delete:
            try await deleteCascading(name, &modify, connection)
            return .deleted(recordName: name)
        case .save(let save):
            prepared = save
        }
        for required in prepared.mustBeLive where try await !isLive(zoneRowID, required.recordName, connection) {
            throw required.error
        }
        modify.enforcer = prepared.enforcer
        let record = prepared.record
        let sequence = modify.nextSequence()
        let tag = RecordRules.changeTag(zoneRowID: zoneRowID, sequence: sequence)
        let modified = ChangeStamp(timestamp: modify.now, userRecordName: modify.writer, deviceID: modify.deviceID)
        let created = live?.created ?? modified
        let fields = String(decoding: prepared.fieldsJSON, as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO records (zone_id, name, type, tag, seq, deleted, fields, parent, created_at, created_by, created_device,
                modified_at, modified_by, modified_device)
            VALUES (\(zoneRowID), \(name), \(record.recordType), \(tag), \(sequence), 0, \(fields), \(record.parent), \(created.timestamp),
                \(created.userRecordName ?? ""), \(created.deviceID), \(modified.timestamp), \(modified.userRecordName ?? ""), \(modified.deviceID))
            ON CONFLICT (zone_id, name) DO UPDATE SET type = EXCLUDED.type, tag = EXCLUDED.tag, seq = EXCLUDED.seq, deleted = 0,
                fields = EXCLUDED.fields, parent = EXCLUDED.parent, created_at = EXCLUDED.created_at, created_by = EXCLUDED.created_by,
                created_device = EXCLUDED.created_device, modified_at = EXCLUDED.modified_at, modified_by = EXCLUDED.modified_by,
                modified_device = EXCLUDED.modified_device
            """, logger: logger)
        if live != nil {
            try await connection.query("DELETE FROM refs WHERE zone_id = \(zoneRowID) AND source = \(name)", logger: logger)
        }
        reindex(name, old: live.map { modify.indexEntries(type: $0.type, fieldsJSON: $0.fieldsJSON) },
                new: modify.indexEntries(type: record.recordType, fields: record.fields), &modify)
        for (_, reference) in prepared.references {
            let action: StoredReferenceAction = reference.action == .deleteSelf ? .deleteSelf : .validate
            try await connection.query(
                """
                INSERT INTO refs (zone_id, target, source, action) VALUES (\(zoneRowID), \(reference.recordName), \(name), \(action.rawValue))
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }
        let stored = StoredRecord(recordName: name, recordType: record.recordType, changeTag: tag, fieldsJSON: prepared.fieldsJSON,
                                  parent: record.parent, created: created, modified: modified, zoneID: modify.zoneID)
        modify.changes.append(CommittedChange(kind: live == nil ? .created : .updated, recordName: name,
                                              recordType: record.recordType, record: stored))
        return .saved(stored)
    }

    /// Deletes `root` and, recursively, every record holding a `DELETE_SELF` reference to a deleted
    /// one — all or nothing (`RecordRules.checkValidateBlockers`).
    func deleteCascading(_ root: String, _ modify: inout ModifyTransaction, _ connection: PostgresConnection) async throws {
        let zoneRowID = modify.zone.id
        var doomed = [root]
        var seen: Set<String> = [root]
        var index = 0
        while index < doomed.count {
            let target = doomed[index]
            index += 1
            for row in try await connection.query(
                "SELECT source FROM refs WHERE zone_id = \(zoneRowID) AND target = \(target) AND action = \(StoredReferenceAction.deleteSelf.rawValue)",
                logger: logger
            ).collect() {
                let source = try row.decode(String.self)
                if seen.insert(source).inserted { doomed.append(source) }
            }
        }
        for target in doomed {
            let blockers = try await connection.query(
                "SELECT source FROM refs WHERE zone_id = \(zoneRowID) AND target = \(target) AND action = \(StoredReferenceAction.validate.rawValue)",
                logger: logger
            ).collect().map { try $0.decode(String.self) }
            try RecordRules.checkValidateBlockers(target: target, validatingSources: blockers, doomed: seen)
        }
        for name in doomed {
            modify.preloaded.removeValue(forKey: name)
            guard let previous = try await loadRecord(zoneRowID, name, connection), !previous.deleted else { continue }
            let sequence = modify.nextSequence()
            let tag = RecordRules.changeTag(zoneRowID: zoneRowID, sequence: sequence)
            try await connection.query(
                """
                UPDATE records SET deleted = 1, fields = '{}', tag = \(tag), seq = \(sequence), modified_at = \(modify.now),
                    modified_by = \(modify.writer), modified_device = \(modify.deviceID)
                WHERE zone_id = \(zoneRowID) AND name = \(name)
                """, logger: logger)
            try await connection.query("DELETE FROM refs WHERE zone_id = \(zoneRowID) AND source = \(name)", logger: logger)
            reindex(name, old: modify.indexEntries(type: previous.type, fieldsJSON: previous.fieldsJSON), new: nil, &modify)
            modify.changes.append(CommittedChange(kind: .deleted, recordName: name, recordType: previous.type,
                                                  record: previous.stored(name, zoneID: modify.zoneID)))
        }
    }

    package func lookupRecords(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String]) async throws -> [Result<StoredRecord, ServerError>] {
        guard recordNames.count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) records per lookup")
        }
        let privateDatabaseID = scope.kind != .shared ? try await databaseID(scope) : 0
        return try await read { connection in
            let addressed = try await self.addressedZone(scope, zone, privateDatabaseID: privateDatabaseID, connection)
            let zoneRow = addressed.row
            let zoneID = addressed.zoneID
            var found: [String: StoredRecord] = [:]
            for row in try await connection.query(
                """
                SELECT \(unescaped: PostgresRecordStore.recordColumns) FROM records
                WHERE zone_id = \(zoneRow.id) AND name = ANY(\(recordNames)) AND deleted = 0
                """, logger: self.logger
            ).collect() {
                let record = try PostgresRecordStore.storedRecord(row, zoneID: zoneID)
                found[record.recordName] = try await self.attachShare(record, zoneRowID: zoneRow.id, caller: scope.userRecordName, connection)
            }
            return recordNames.map { name in
                guard let record = found[name] else {
                    return .failure(ServerError(.notFound, "record '\(name)' does not exist").with(recordName: name))
                }
                return .success(record)
            }
        }
    }

    /// Changes after the token's sequence, in sequence order, each record once in its latest
    /// state, read in one snapshot. Sequences commit in order (see the type's comment), so a
    /// client following `moreComing` never skips a change, whichever daemon wrote it.
    package func zoneChanges(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                            recordTypes: Set<String>?) async throws -> ZoneChangesPage
    {
        let caller = scope.userRecordName
        let page = try await readZoneFeed(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit,
                                          recordTypes: recordTypes) { rows, zoneID, zoneRowID, connection in
            var changes: [RecordChange] = []
            for row in rows {
                let record = try PostgresRecordStore.storedRecord(row, zoneID: zoneID)
                changes.append(try PostgresRecordStore.isDeleted(row)
                    ? .deleted(recordName: record.recordName, recordType: record.recordType)
                    : .changed(try await self.attachShare(record, zoneRowID: zoneRowID, caller: caller, connection)))
            }
            return changes
        }
        return ZoneChangesPage(zoneID: page.zoneID, changes: page.rows, syncToken: page.token, moreComing: page.moreComing)
    }

    /// `zoneChanges` with its records as JSON written from the rows' bytes (`RecordJSONWriter`):
    /// no string decoded per column, the stored fields JSON spliced as it is.
    package func zoneChangesJSON(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                                 recordTypes: Set<String>?, options: RecordJSONOptions) async throws -> SerializedRecordPage
    {
        let caller = scope.userRecordName
        let page = try await readZoneFeed(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit,
                                          recordTypes: recordTypes) { rows, zoneID, zoneRowID, connection in
            var writer = RecordJSONWriter(rows: rows.count, options: options)
            writer.setZone(zoneID)
            for row in rows {
                let copied = try PostgresRecordStore.withRowBytes(row) { bytes in
                    guard bytes.deleted || bytes.isCopiedAsStored(options) else { return false }
                    writer.appendStored(bytes)
                    return true
                }
                if copied { continue }
                let record = try PostgresRecordStore.storedRecord(row, zoneID: zoneID)
                writer.append(try await self.attachShare(record, zoneRowID: zoneRowID, caller: caller, connection))
            }
            return writer.finish()
        }
        return SerializedRecordPage(zoneID: page.zoneID, records: page.rows, syncToken: page.token, moreComing: page.moreComing)
    }

    /// One page of a zone's feed in one snapshot: its rows of `recordColumns` and `seq` (of
    /// `recordTypes`) made into `Rows` by `make` within the transaction (a share's members are
    /// read there), with the zone, the page's token and `moreComing`.
    private func readZoneFeed<Rows: Sendable>(
        _ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int, recordTypes: Set<String>?,
        make: @escaping @Sendable ([PostgresRow], ZoneID, Int64, PostgresConnection) async throws -> Rows
    ) async throws -> (rows: Rows, zoneID: ZoneID, token: String, moreComing: Bool) {
        let limit = StoreLimits.clampLimit(resultsLimit, maximum: StoreLimits.maximumResultsLimit)
        let privateDatabaseID = scope.kind != .shared ? try await databaseID(scope) : 0
        return try await read { connection in
            let addressed = try await self.addressedZone(scope, zone, privateDatabaseID: privateDatabaseID, connection)
            let zoneRow = addressed.row
            let databaseID = addressed.databaseID
            let since: Int64
            switch try FeedRules.zoneStart(syncToken, storeID: self.storeID, zone: zoneRow) {
            case .since(let sequence):
                since = sequence
            case .otherZone(let rowID):
                let recreated = try await !connection.query(
                    "SELECT 1 FROM zones WHERE id = \(rowID) AND database_id = \(databaseID) AND name = \(zoneRow.name) AND deleted = 1",
                    logger: self.logger
                ).collect().isEmpty
                throw FeedRules.otherZoneError(recreated: recreated, zoneName: zoneRow.name)
            }
            var rows = try await connection.query(
                """
                SELECT \(unescaped: PostgresRecordStore.recordColumns), seq FROM records
                WHERE zone_id = \(zoneRow.id) AND seq > \(since) ORDER BY seq LIMIT \(Int64(limit + 1))
                """, logger: self.logger
            ).collect()
            let moreComing = rows.count > limit
            if moreComing { rows.removeLast(rows.count - limit) }
            var lastSequence = try rows.last.map { try $0.makeRandomAccess()[12].decode(Int64.self) } ?? since
            if let recordTypes { rows = try rows.filter { recordTypes.contains(try $0.makeRandomAccess()[1].decode(String.self)) } }
            if !moreComing { lastSequence = max(lastSequence, zoneRow.seq) }
            let token = FeedRules.token(.zone, storeID: self.storeID, ownerID: zoneRow.id, sequence: lastSequence)
            return (try await make(rows, addressed.zoneID, zoneRow.id, connection), addressed.zoneID, token, moreComing)
        }
    }

    package func databaseChanges(_ scope: DatabaseScope, syncToken: String?, resultsLimit: Int) async throws -> DatabaseChangesPage {
        if scope.kind == .shared { return try await sharedDatabaseChanges(scope, syncToken: syncToken) }
        let limit = StoreLimits.clampLimit(resultsLimit, maximum: StoreLimits.maximumResultsLimit)
        let databaseID = try await databaseID(scope)
        return try await read { connection in
            let row = try await connection.query("SELECT db_seq, purged_seq FROM databases WHERE id = \(databaseID)", logger: self.logger)
                .collect().first
            var (current, purged): (Int64, Int64) = (0, 0)
            if let row { (current, purged) = try row.decode((Int64, Int64).self) }
            let since = try FeedRules.databaseStart(syncToken, storeID: self.storeID, databaseID: databaseID, purgedSeq: purged)
            var zones: [(zoneID: ZoneID, deleted: Bool)] = []
            var lastSequence = since
            var moreComing = false
            for row in try await connection.query(
                """
                SELECT name, deleted, db_seq FROM zones WHERE database_id = \(databaseID) AND db_seq > \(since)
                ORDER BY db_seq LIMIT \(Int64(limit + 1))
                """, logger: self.logger
            ).collect() {
                if zones.count == limit { moreComing = true; break }
                let (name, deleted, dbSeq) = try row.decode((String, Int64, Int64).self)
                zones.append((self.zoneID(name, scope), deleted != 0))
                lastSequence = dbSeq
            }
            if !moreComing { lastSequence = max(lastSequence, current) }
            let token = FeedRules.token(.database, storeID: self.storeID, ownerID: databaseID, sequence: lastSequence)
            return DatabaseChangesPage(zones: zones, syncToken: token, moreComing: moreComing)
        }
    }
}
