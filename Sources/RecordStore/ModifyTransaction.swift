import RecordModel

/// The state of one modify transaction, on either backend: the zone's advancing change sequence
/// and what changed.
package struct ModifyTransaction {
    package let scope: DatabaseScope
    package let zone: ZoneRow
    package let zoneID: ZoneID
    package let now: Int64
    package let deviceID: String?
    /// Who writes: the zone's owner, or a participant writing in a shared zone (`created` and
    /// `modified` name the writer).
    package let writer: String
    package var sequence: Int64
    package var changes: [CommittedChange] = []
    package var enforcer: SchemaEnforcer
    /// How the transaction changed `query_counts` (written once, before commit).
    package var indexCounts: [QueryIndex.CountKey: Int64] = [:]
    /// Each record the transaction saved or deleted, with its final index entries (type nil: no
    /// longer live), for a backend that writes the index once per transaction (PostgreSQL).
    package var indexedRecords: [String: (type: String?, entries: [QueryIndex.Entry])] = [:]
    /// The batch's records as they were before its first operation, read in one query (nil
    /// inside: no such record). An operation takes its record once; a cascade drops the records
    /// it deletes, which are then read again.
    package var preloaded: [String: ExistingRecord?] = [:]
    /// The zone's indexed fields by record type (`query_fields`), read at the batch's start.
    package var indexedFields: [String: Set<String>] = [:]

    /// The index entries of a record's typed fields (its type's indexed ones).
    package func indexEntries(type: String, fields: [String: FieldValue]) -> (type: String, entries: [QueryIndex.Entry]) {
        (type, QueryIndex.entries(fields, indexed: indexedFields[type] ?? []))
    }

    /// The index entries of a stored record (its type's indexed ones).
    package func indexEntries(type: String, fieldsJSON: [UInt8]) -> (type: String, entries: [QueryIndex.Entry]) {
        (type, QueryIndex.entries(fieldsJSON, indexed: indexedFields[type] ?? []))
    }

    package init(scope: DatabaseScope, zone: ZoneRow, zoneID: ZoneID, now: Int64, deviceID: String?, sequence: Int64,
                 enforcer: SchemaEnforcer, writer: String? = nil) {
        self.scope = scope
        self.writer = writer ?? scope.userRecordName
        self.zone = zone
        self.zoneID = zoneID
        self.now = now
        self.deviceID = deviceID
        self.sequence = sequence
        self.enforcer = enforcer
    }

    package mutating func nextSequence() -> Int64 {
        sequence += 1
        return sequence
    }
}
