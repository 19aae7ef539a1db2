import RecordModel

/// A store whose `RecordStorage` methods are the engine's scripts as they stand (zones, records
/// modify and lookup, the feeds, sharing, notifications, upkeep): both backends conform, so each
/// of these is written once, here.
package protocol EngineStorage {
    var engine: StoreEngine { get }
}

extension EngineStorage {
    package func listZones(_ scope: DatabaseScope) async throws -> [ZoneInfo] {
        if scope.kind == .shared { return try await engine.listSharedZones(scope) }
        return try await engine.listZones(scope)
    }

    package func lookupZone(_ scope: DatabaseScope, zoneName: String) async throws -> ZoneInfo {
        try await engine.lookupZone(scope, zoneName: zoneName)
    }

    package func createZone(_ scope: DatabaseScope, zoneName: String) async throws -> ZoneInfo {
        try await engine.createZone(scope, zoneName: zoneName)
    }

    package func deleteZone(_ scope: DatabaseScope, zoneName: String) async throws {
        try await engine.deleteZone(scope, zoneName: zoneName)
    }

    package func lookupRecords(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String]) async throws
        -> [Result<StoredRecord, ServerError>]
    {
        try await engine.lookupRecords(scope, zone: zone, recordNames: recordNames)
    }

    package func zoneChanges(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                            recordTypes: Set<String>?) async throws -> ZoneChangesPage
    {
        try await engine.zoneChanges(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes)
    }

    package func databaseChanges(_ scope: DatabaseScope, syncToken: String?, resultsLimit: Int) async throws -> DatabaseChangesPage {
        if scope.kind == .shared { return try await engine.sharedDatabaseChanges(scope, syncToken: syncToken) }
        return try await engine.databaseChanges(scope, syncToken: syncToken, resultsLimit: resultsLimit)
    }

    package func notifications(databaseID: Int64, after cursor: Int64, limit: Int) async throws -> [StoredNotification] {
        try await engine.notifications(databaseID: databaseID, after: cursor, limit: limit)
    }

    package func purgeNotifications(olderThanMilliseconds age: Int64) async throws -> Int {
        try await engine.purgeNotifications(olderThanMilliseconds: age)
    }

    package func statistics() async throws -> StoreStatistics { try await engine.statistics() }

    package func purgeTombstones(olderThanMilliseconds age: Int64) async throws -> Int {
        try await engine.purgeTombstones(olderThanMilliseconds: age)
    }

    package func modifyRecords(_ scope: DatabaseScope, zone: ZoneID, operations: [RecordOperation], atomic: Bool,
                               deviceID: String?) async throws -> [RecordOperationResult]
    {
        try await engine.modifyRecords(scope, zone: zone, operations: operations, atomic: atomic, deviceID: deviceID)
    }

    package func discoverUsers(emails: [String], recordNames: [String]) async throws -> [UserIdentity] {
        try await engine.discoverUsers(emails: emails, recordNames: recordNames)
    }

    package func resolveShares(_ scope: DatabaseScope, shortGUIDs: [String], accept: Bool) async throws -> [Result<JSONValue, ServerError>] {
        try await engine.resolveShares(scope, shortGUIDs: shortGUIDs, accept: accept)
    }

    package func invitations(_ scope: DatabaseScope) async throws -> [JSONValue] { try await engine.invitations(scope) }

    package func declineInvitations(_ scope: DatabaseScope, shortGUIDs: [String]) async throws -> [Result<JSONValue, ServerError>] {
        try await engine.declineInvitations(scope, shortGUIDs: shortGUIDs)
    }

    package func lookupSharedZone(_ scope: DatabaseScope, zone: ZoneID) async throws -> ZoneInfo {
        try await engine.lookupSharedZone(scope, zone: zone)
    }
}

extension SQLiteStorage: EngineStorage {}
