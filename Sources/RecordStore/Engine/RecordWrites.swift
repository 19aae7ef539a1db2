import RecordModel

/// A state of a record that a batch replaced (see `RecordWrites.superseded`).
struct SupersededVersion {
    var recordName: String
    var state: ExistingRecord
    var sequence: Int64
}

/// A modify batch's writes, planned in memory against the records as the batch leaves them and
/// written by `flush` in a bounded number of statements: one upsert of every row (saves and
/// tombstones), one replacement of the references and of the query index entries of the records
/// it touched, one addition to the index counts.
///
/// An operation reads what it needs first and changes this state only once it cannot fail any
/// more, so a failed operation of a non-atomic batch leaves no trace and needs no savepoint.
struct RecordWrites {
    var transaction: ModifyTransaction
    /// What the batch knows of a record: its state as the batch leaves it (nil: no row), that
    /// state's zone sequence, and where its row to write is. One entry a name, so a save hashes
    /// the name once rather than once for each.
    private struct Known {
        var state: ExistingRecord?
        var sequence: Int64?
        var row: Int?
    }
    /// Each record read or written so far.
    private var known: [String: Known] = [:]
    /// The rows to write, in the order first written.
    private var rows: [[SQLValue]] = []
    /// The references of each record the batch wrote whose stored ones it replaces (a record
    /// that had none and has none is absent).
    private var references: [String: [(target: String, action: StoredReferenceAction)]] = [:]
    /// The states this batch replaced: each record's stored state before the batch first wrote it,
    /// and each state the batch wrote and then wrote again. A webhook endpoint that has not had
    /// one yet still gets it (`StoreEngine.keepUndeliveredVersions`).
    private(set) var superseded: [SupersededVersion] = []
    /// The stored references to each target read so far, by target (the table does not change
    /// before `flush`; those of sources in `references` are stale and skipped).
    private var storedReferences: [String: [(source: String, action: StoredReferenceAction)]] = [:]

    init(_ transaction: ModifyTransaction) { self.transaction = transaction }

    private var zoneRowID: Int64 { transaction.zone.id }

    static let columns = "type, tag, deleted, fields, parent, created_at, created_by, created_device, modified_at, modified_by, modified_device, name"
    /// `columns` of `records r`, then its `seq`.
    static let columnsOfR = columns.split(separator: ",").map { "r." + $0.filter { !$0.isWhitespace } }.joined(separator: ", ") + ", r.seq"

    /// Reads the named records the batch does not know yet, in one statement.
    mutating func load(_ names: [String], _ connection: any StoreConnection) async throws {
        let unknown = names.filter { known.index(forKey: $0) == nil }
        guard !unknown.isEmpty else { return }
        known.reserveCapacity(known.count + unknown.count)
        for name in unknown { known[name] = Known() }
        for row in try await connection.rows("SELECT \(Self.columnsOfR) " + connection.dialect.recordsNamed(left: false, liveOnly: false),
                                             [.text(JSONArgument.array(unknown)), .int(zoneRowID)]) {
            known[row.text(11)] = Known(state: ExistingRecord(row), sequence: row.int(12))
        }
    }

    /// The record's live state (nil: none or a tombstone), read if the batch does not know it.
    mutating func live(_ name: String, _ connection: any StoreConnection) async throws -> ExistingRecord? {
        if let index = known.index(forKey: name) { return known.values[index].state.flatMap { $0.deleted ? nil : $0 } }
        try await load([name], connection)
        return known[name]!.state.flatMap { $0.deleted ? nil : $0 }
    }

    // MARK: Operations

    mutating func apply(_ operation: RecordOperation, _ connection: any StoreConnection) async throws -> RecordOperationResult {
        let name = operation.recordName ?? ""
        try Names.validateRecordName(name)
        let live = try await live(name, connection)
        let prepared: RecordRules.PreparedSave
        switch try RecordRules.plan(operation, name: name, live: live, zoneName: transaction.zone.name, zoneID: transaction.zoneID,
                                    scope: transaction.scope, enforcer: transaction.enforcer) {
        case .answered(let result):
            return result
        case .delete:
            try await deleteCascading(name, connection)
            return .deleted(recordName: name)
        case .save(let save):
            prepared = save
        }
        let unknown = prepared.mustBeLive.map(\.recordName).filter { known.index(forKey: $0) == nil }
        if !unknown.isEmpty { try await load(unknown, connection) }
        for required in prepared.mustBeLive where known[required.recordName]?.state?.deleted ?? true { throw required.error }
        transaction.enforcer = prepared.enforcer
        let record = prepared.record
        let saved = save(name, type: record.recordType, fieldsJSON: prepared.fieldsJSON, parent: record.parent, live: live,
                         references: prepared.references.map { ($0.reference.recordName, $0.reference.action == .deleteSelf ? .deleteSelf : .validate) },
                         indexed: transaction.indexEntries(type: record.recordType, fields: record.fields))
        return .saved(saved)
    }

    /// Writes `name` as a live record (`live`: its state before, nil when new) and returns it as stored.
    mutating func save(_ name: String, type: String, fieldsJSON: [UInt8], parent: String?, live: ExistingRecord?,
                       references: [(target: String, action: StoredReferenceAction)],
                       indexed: (type: String, entries: [QueryIndex.Entry])? = nil) -> StoredRecord
    {
        let sequence = transaction.nextSequence()
        let tag = RecordRules.changeTag(zoneRowID: zoneRowID, sequence: sequence)
        let modified = ChangeStamp(timestamp: transaction.now, userRecordName: transaction.writer, deviceID: transaction.deviceID)
        let state = ExistingRecord(type: type, tag: tag, deleted: false, fieldsJSON: fieldsJSON, parent: parent,
                                   created: live?.created ?? modified, modified: modified)
        write(name, state, sequence: sequence)
        if live != nil || !references.isEmpty || self.references[name] != nil { self.references[name] = references }
        reindex(name, old: live.map { transaction.indexEntries(type: $0.type, fieldsJSON: $0.fieldsJSON) },
                new: indexed ?? transaction.indexEntries(type: type, fieldsJSON: fieldsJSON))
        let stored = state.stored(name, zoneID: transaction.zoneID)
        transaction.changes.append(CommittedChange(kind: live == nil ? .created : .updated, recordName: name, recordType: type, record: stored,
                                                   sequence: sequence))
        return stored
    }

    /// Deletes `root` and, recursively, every record holding a `DELETE_SELF` reference to a deleted
    /// one — all or nothing: a live `VALIDATE` reference from outside the set fails the whole
    /// delete. One read of the references per level of the cascade.
    mutating func deleteCascading(_ root: String, _ connection: any StoreConnection) async throws {
        var doomed = [root]
        var seen: Set<String> = [root]
        var validating: [String: [String]] = [:]
        var frontier = [root]
        while !frontier.isEmpty {
            let edges = try await references(to: frontier, connection)
            frontier = []
            for edge in edges {
                if edge.action == .validate {
                    validating[edge.target, default: []].append(edge.source)
                } else if seen.insert(edge.source).inserted {
                    doomed.append(edge.source)
                    frontier.append(edge.source)
                }
            }
        }
        for target in doomed {
            try RecordRules.checkValidateBlockers(target: target, validatingSources: validating[target] ?? [], doomed: seen)
        }
        try await load(doomed, connection)
        let modified = ChangeStamp(timestamp: transaction.now, userRecordName: transaction.writer, deviceID: transaction.deviceID)
        for name in doomed {
            guard let previous = known[name]?.state, !previous.deleted else { continue }
            let sequence = transaction.nextSequence()
            let tombstone = ExistingRecord(type: previous.type, tag: RecordRules.changeTag(zoneRowID: zoneRowID, sequence: sequence), deleted: true,
                                           fieldsJSON: Array("{}".utf8), parent: previous.parent, created: previous.created, modified: modified)
            write(name, tombstone, sequence: sequence)
            references[name] = []
            reindex(name, old: transaction.indexEntries(type: previous.type, fieldsJSON: previous.fieldsJSON), new: nil)
            transaction.changes.append(CommittedChange(kind: .deleted, recordName: name, recordType: previous.type,
                                                       record: previous.stored(name, zoneID: transaction.zoneID), sequence: sequence))
        }
    }

    /// Reads the stored references to the targets not read yet, in one statement (the batch's
    /// deletes are read at its start, so only a cascade's deeper levels read more).
    mutating func loadReferences(to targets: [String], _ connection: any StoreConnection) async throws {
        let unread = targets.filter { storedReferences.index(forKey: $0) == nil }
        guard !unread.isEmpty else { return }
        for target in unread { storedReferences[target] = [] }
        for row in try await connection.rows("SELECT source, target, action FROM refs WHERE zone_id = ? AND "
                                                + connection.dialect.isInJSONArray("target"),
                                              [.int(zoneRowID), .text(JSONArgument.array(unread))]) {
            guard let action = StoredReferenceAction(rawValue: row.int(2)) else { continue }
            storedReferences[row.text(1), default: []].append((row.text(0), action))
        }
    }

    /// The references to `targets` as the batch leaves them: the stored ones of records it has
    /// not rewritten, and those it wrote.
    private mutating func references(to targets: [String], _ connection: any StoreConnection) async throws
        -> [(source: String, target: String, action: StoredReferenceAction)]
    {
        try await loadReferences(to: targets, connection)
        var edges: [(source: String, target: String, action: StoredReferenceAction)] = []
        for target in targets {
            for stored in storedReferences[target] ?? [] where references[stored.source] == nil {
                edges.append((stored.source, target, stored.action))
            }
        }
        let wanted = Set(targets)
        for (source, outgoing) in references {
            for reference in outgoing where wanted.contains(reference.target) { edges.append((source, reference.target, reference.action)) }
        }
        // Sorted: the cascade's order (and so its sequence numbers) does not depend on hashing.
        return edges.sorted { ($0.target, $0.source, $0.action.rawValue) < ($1.target, $1.source, $1.action.rawValue) }
    }

    private mutating func write(_ name: String, _ state: ExistingRecord, sequence: Int64) {
        let row: [SQLValue] = [
            .int(zoneRowID), .text(name), .text(state.type), .text(state.tag), .int(sequence), .int(state.deleted ? 1 : 0),
            .blob(state.fieldsJSON), state.parent.sqlValue, .int(state.created.timestamp), .text(state.created.userRecordName ?? ""),
            state.created.deviceID.sqlValue, .int(state.modified.timestamp), .text(state.modified.userRecordName ?? ""),
            state.modified.deviceID.sqlValue,
        ]
        guard let index = known.index(forKey: name) else {
            known[name] = Known(state: state, sequence: sequence, row: rows.count)
            rows.append(row)
            return
        }
        if let previous = known.values[index].state, let previousSequence = known.values[index].sequence {
            superseded.append(SupersededVersion(recordName: name, state: previous, sequence: previousSequence))
        }
        known.values[index].state = state
        known.values[index].sequence = sequence
        if let rowIndex = known.values[index].row {
            rows[rowIndex] = row
        } else {
            known.values[index].row = rows.count
            rows.append(row)
        }
    }

    /// Notes a record's new index entries (`old`: as it was, nil when not live; `new`: as it is,
    /// nil when deleted) and the count changes, for `flush`.
    private mutating func reindex(_ name: String, old: (type: String, entries: [QueryIndex.Entry])?,
                                  new: (type: String, entries: [QueryIndex.Entry])?)
    {
        // Entries exist only for indexed fields: records of types with none have nothing to replace.
        let indexed = [old?.type, new?.type].contains { $0.map { transaction.indexedFields[$0] != nil } ?? false }
        if indexed { transaction.indexedRecords[name] = (new?.type, new?.entries ?? []) }
        QueryIndex.countChanges(old: old, new: new, into: &transaction.indexCounts)
    }

    // MARK: Writing

    private static let recordColumns: [StoreColumn] = [
        StoreColumn("zone_id", .integer), StoreColumn("name", .text), StoreColumn("type", .text), StoreColumn("tag", .text),
        StoreColumn("seq", .integer), StoreColumn("deleted", .integer), StoreColumn("fields", .blob), StoreColumn("parent", .text),
        StoreColumn("created_at", .integer), StoreColumn("created_by", .text), StoreColumn("created_device", .text),
        StoreColumn("modified_at", .integer), StoreColumn("modified_by", .text), StoreColumn("modified_device", .text),
    ]

    /// Writes what the batch planned.
    func flush(_ connection: any StoreConnection) async throws {
        let dialect = connection.dialect
        let zone = SQLValue.int(zoneRowID)
        if !rows.isEmpty {
            var columns = Self.recordColumns
            columns[6].type = dialect.fieldsType
            let values = dialect.fieldsType == .blob ? rows : rows.map { row -> [SQLValue] in
                var row = row
                if case .blob(let bytes) = row[6] { row[6] = dialect.jsonValue(bytes) }
                return row
            }
            try await connection.insertRows(into: "records", columns: columns, rows: values,
                                            suffix: dialect.upsert(conflict: ["zone_id", "name"], update: columns.dropFirst(2).map(\.name)))
        }
        if !references.isEmpty {
            try await connection.execute("DELETE FROM refs WHERE zone_id = ? AND " + dialect.isInJSONArray("source"),
                                         [zone, .text(JSONArgument.array(Array(references.keys)))])
            let rows = references.flatMap { source, outgoing in outgoing.map { [zone, .text($0.target), .text(source), .int($0.action.rawValue)] } }
            try await connection.insertRows(into: "refs", columns: [StoreColumn("zone_id", .integer), StoreColumn("target", .text),
                                                                    StoreColumn("source", .text), StoreColumn("action", .integer)],
                                            rows: rows, suffix: "ON CONFLICT DO NOTHING")
        }
        if !transaction.indexedRecords.isEmpty {
            try await connection.execute("DELETE FROM query_index WHERE zone_id = ? AND " + dialect.isInJSONArray("record_name"),
                                         [zone, .text(JSONArgument.array(Array(transaction.indexedRecords.keys)))])
            let entries: [[SQLValue]] = transaction.indexedRecords.flatMap { name, indexed -> [[SQLValue]] in
                guard let type = indexed.type else { return [] }
                return indexed.entries.map { [zone, .text(type), .text($0.field), .text($0.key), .text(name)] }
            }
            try await QueryIndexTables.insertEntries(entries, connection)
        }
        try await QueryIndexTables.addCounts(transaction.indexCounts, zone: zoneRowID, connection)
    }
}

extension ExistingRecord {
    /// Columns `RecordWrites.columns` of a `records` row.
    init(_ row: StoreRow) {
        self.init(type: row.text(0), tag: row.text(1), deleted: row.int(2) != 0, fieldsJSON: row.blob(3), parent: row.optionalText(4),
                  created: ChangeStamp(timestamp: row.int(5), userRecordName: row.text(6), deviceID: row.optionalText(7)),
                  modified: ChangeStamp(timestamp: row.int(8), userRecordName: row.text(9), deviceID: row.optionalText(10)))
    }
}
