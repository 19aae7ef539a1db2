import RecordModel

/// One field a sync found changed both here and on the server, and how the merge settled it.
public struct ConflictDetail: Equatable, Sendable {
    public var recordName: String
    public var recordType: String
    public var field: String
    /// The value the record keeps, and the one it lost (nil: the field was removed on that side).
    public var kept: FieldValue?
    public var lost: FieldValue?
    /// Whether the kept value is this machine's own edit.
    public var keptLocal: Bool
    /// Who wrote the server's side (a user record name), when the server said.
    public var serverWriter: String?
    /// The record as merged, so the conflict can be shown by the record's name.
    public var record: Record

    /// The fields a merge settled, described from this machine's side.
    static func details(of result: RecordMerge.Result, local: Record, server: Record, merged: Record) -> [ConflictDetail] {
        let localWins = RecordMerge.compare(local: local, server: server)
        return result.conflictingFields.sorted().map { field in
            ConflictDetail(recordName: server.recordName, recordType: server.recordType, field: field,
                           kept: localWins ? local.fields[field] : server.fields[field],
                           lost: localWins ? server.fields[field] : local.fields[field],
                           keptLocal: localWins, serverWriter: server.modified?.userRecordName, record: merged)
        }
    }
}
