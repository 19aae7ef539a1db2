import RecordModel

extension SQLiteStorage {
    /// The page's record JSON is written on the pool's thread, from SQLite's row buffers: the task
    /// receives one buffer, not a page of records made on one core and read and freed on another.
    package func zoneChangesJSON(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                                 recordTypes: Set<String>?, options: RecordJSONOptions) async throws -> SerializedRecordPage
    {
        try await offload {
            try $0.zoneChangesJSON(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes, options: options)
        }
    }

    package func lookupRecordsJSON(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String], options: RecordJSONOptions) async throws
        -> SerializedRecords
    {
        try await offload { try $0.lookupRecordsJSON(scope, zone: zone, recordNames: recordNames, options: options) }
    }
}
