import RecordModel

extension SQLiteStorage {
    /// The page is written on the pool's thread, from SQLite's row buffers: the task receives one
    /// buffer, not a page of records made on one core and read and freed on another.
    package func zoneChangesAnswer(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                                   recordTypes: Set<String>?, options: RecordAnswerOptions) async throws -> [UInt8]
    {
        try await offload {
            try $0.zoneChangesAnswer(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes, options: options)
        }
    }

    package func lookupRecordsAnswer(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String], options: RecordAnswerOptions) async throws -> [UInt8] {
        try await offload { try $0.lookupRecordsAnswer(scope, zone: zone, recordNames: recordNames, options: options) }
    }
}
