import Foundation
import PostgresNIO
import RecordModel
import RecordStore

extension PostgresRecordStore {
    package func lookupRecordsJSON(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String], options: RecordJSONOptions) async throws
        -> SerializedRecords
    {
        try await engine.lookupRecordsJSON(scope, zone: zone, recordNames: recordNames, options: options)
    }

    package func zoneChangesJSON(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                                 recordTypes: Set<String>?, options: RecordJSONOptions) async throws -> SerializedRecordPage
    {
        try await engine.zoneChangesJSON(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes,
                                         options: options)
    }
}
