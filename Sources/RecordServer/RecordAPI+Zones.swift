import RecordModel
import RecordStore

extension RecordAPI {
    func listZones(_ scope: DatabaseScope) async throws -> JSONValue {
        let zones = try await self.store.listZones(scope)
        return ["zones": .array(zones.map(\.json))]
    }

    func lookupZones(_ body: JSONValue, _ scope: DatabaseScope) async throws -> JSONValue {
        let names = try body.requiredArray("zones").map { entry -> String in
            try ZoneID(json: entry["zoneID"] ?? entry).zoneName
        }
        var results: [JSONValue] = []
        for name in names {
            do {
                results.append(try await store.lookupZone(scope, zoneName: name).json)
            } catch var error as ServerError {
                error.zoneID = ZoneID(zoneName: name)
                results.append(error.json())
            }
        }
        return ["zones": .array(results)]
    }

    /// Each zone operation commits on its own, as CloudKit answers zones one by one: a failed
    /// delete does not undo a create beside it.
    func modifyZones(_ body: JSONValue, _ scope: DatabaseScope) async throws -> JSONValue {
        let requested = try body.requiredArray("operations")
        guard requested.count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) zone operations per request, got \(requested.count)")
        }
        let operations = try requested.map { operation -> (create: Bool, name: String) in
            guard let type = operation["operationType"]?.stringValue, type == "create" || type == "delete" else {
                throw ServerError.badRequest("zone operationType must be create or delete")
            }
            guard let zone = operation["zone"] else { throw ServerError.badRequest("a zone operation needs a zone") }
            return (type == "create", try ZoneID(json: zone["zoneID"] ?? zone).zoneName)
        }
        var results: [JSONValue] = []
        for operation in operations {
            do {
                if operation.create {
                    results.append(try await store.createZone(scope, zoneName: operation.name).json)
                } else {
                    try await store.deleteZone(scope, zoneName: operation.name)
                    results.append(["zoneID": ZoneID(zoneName: operation.name, ownerRecordName: scope.zoneOwnerRecordName).json, "deleted": true])
                }
            } catch var error as ServerError {
                error.zoneID = ZoneID(zoneName: operation.name)
                results.append(error.json())
            }
        }
        return ["zones": .array(results)]
    }

    /// `changes/database`, and with `metaSyncToken` its older form `zones/changes`, whose token CloudKit
    /// names `metaSyncToken` (the live service ignores `syncToken` there): that form takes either
    /// name, `metaSyncToken` first, and answers both.
    func databaseChanges(_ body: JSONValue, _ scope: DatabaseScope, metaSyncToken: Bool) async throws -> JSONValue {
        let token = try (metaSyncToken ? body.optionalString("metaSyncToken") : nil) ?? body.optionalString("syncToken")
        let limit = try body.optionalInt("resultsLimit") ?? 400
        let page = try await self.store.databaseChanges(scope, syncToken: token, resultsLimit: limit)
        // The older form answers CloudKit's whole zone dictionary (its sync token and `atomic`), as
        // clients of it read them.
        let live = metaSyncToken && page.zones.contains { !$0.deleted } ? try await self.store.listZones(scope) : []
        let zones: [JSONValue] = page.zones.map { zone in
            if zone.deleted { return ["zoneID": zone.zoneID.json, "deleted": true] }
            return live.first { $0.zoneID == zone.zoneID }?.json ?? ["zoneID": zone.zoneID.json]
        }
        var answer: [String: JSONValue] = ["zones": .array(zones), "syncToken": .string(page.syncToken), "moreComing": .bool(page.moreComing)]
        if metaSyncToken { answer["metaSyncToken"] = .string(page.syncToken) }
        return .object(answer)
    }
}
