import RecordModel

/// A store whose records modify and sharing are the engine's scripts: both backends conform, so
/// their `RecordStorage` methods for these are these.
package protocol EngineWriteStorage {
    var engine: StoreEngine { get }
}

extension EngineWriteStorage {
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

    package func lookupSharedZone(_ scope: DatabaseScope, zone: ZoneID) async throws -> ZoneInfo {
        try await engine.lookupSharedZone(scope, zone: zone)
    }
}

extension SQLiteStorage: EngineWriteStorage {}
