import RecordModel

extension SQLiteStorage {
    /// The page's record JSON is written on the store's reader thread, from SQLite's row buffers
    /// (`StoreEngine.zoneChangesJSON`): the task receives one buffer, not a page of records.
    package func zoneChangesJSON(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                                 recordTypes: Set<String>?, options: RecordJSONOptions) async throws -> SerializedRecordPage
    {
        try await engine.zoneChangesJSON(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes,
                                         options: options)
    }

    package func lookupRecordsJSON(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String], options: RecordJSONOptions) async throws
        -> SerializedRecords
    {
        try await engine.lookupRecordsJSON(scope, zone: zone, recordNames: recordNames, options: options)
    }
}
