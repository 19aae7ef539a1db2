import Foundation
import PostgresNIO
import RecordModel
import RecordStore

extension PostgresRecordStore {
    package func lookupRecords(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String]) async throws -> [Result<StoredRecord, ServerError>] {
        try await engine.lookupRecords(scope, zone: zone, recordNames: recordNames)
    }

    package func lookupRecordsJSON(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String], options: RecordJSONOptions) async throws
        -> SerializedRecords
    {
        try await engine.lookupRecordsJSON(scope, zone: zone, recordNames: recordNames, options: options)
    }

    package func zoneChanges(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                            recordTypes: Set<String>?) async throws -> ZoneChangesPage
    {
        try await engine.zoneChanges(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes)
    }

    package func zoneChangesJSON(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                                 recordTypes: Set<String>?, options: RecordJSONOptions) async throws -> SerializedRecordPage
    {
        try await engine.zoneChangesJSON(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes,
                                         options: options)
    }

    package func databaseChanges(_ scope: DatabaseScope, syncToken: String?, resultsLimit: Int) async throws -> DatabaseChangesPage {
        if scope.kind == .shared { return try await engine.sharedDatabaseChanges(scope, syncToken: syncToken) }
        return try await engine.databaseChanges(scope, syncToken: syncToken, resultsLimit: resultsLimit)
    }
}
