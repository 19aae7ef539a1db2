import RecordModel
import RecordStore

// The sharing endpoints (routes of `RecordAPI.router`): `/shared/` (the zones other
// users shared with the caller, served by the same store operations with a scope of kind
// `.shared`), the share links under `/public/records/resolve|accept`, and user discovery under
// `/public/users/`. Access is decided in the store's transactions; these routes only decode and encode.
extension RecordAPI {
    func resolveShares(_ body: JSONValue, _ scope: DatabaseScope, accept: Bool) async throws -> JSONValue {
        let results = try await store.resolveShares(scope, shortGUIDs: try RecordAPI.shortGUIDs(body), accept: accept)
        return RecordAPI.shareResults(results)
    }

    /// `{"shortGUIDs": [{"value"}]}` (also plain strings).
    static func shortGUIDs(_ body: JSONValue) throws -> [String] {
        try body.requiredArray("shortGUIDs").map { entry -> String in
            guard let value = entry["value"]?.stringValue ?? entry.stringValue else {
                throw ServerError.badRequest("every shortGUID needs a string value")
            }
            return value
        }
    }

    /// `POST …/shared/invitations/decline` `{"shortGUIDs": [{"value"}]}`: the caller turns the
    /// invitations down (the console's Decline).
    func declineInvitations(_ body: JSONValue, _ scope: DatabaseScope) async throws -> JSONValue {
        RecordAPI.shareResults(try await store.declineInvitations(scope, shortGUIDs: try RecordAPI.shortGUIDs(body)))
    }

    static func shareResults(_ results: [Result<JSONValue, ServerError>]) -> JSONValue {
        ["results": .array(results.map { result in
            switch result {
            case .success(let json): return json
            case .failure(let error): return error.json()
            }
        })]
    }

    func discoverUsers(_ body: JSONValue, byEmailList: Bool) async throws -> JSONValue {
        let lookups = byEmailList ? try body.requiredArray("users") : try body.requiredArray("lookupInfos")
        let (emails, names) = try ShareRules.lookupInfos(lookups)
        let users = try await store.discoverUsers(emails: emails, recordNames: names)
        return ["users": .array(users.map(\.json))]
    }

    func lookupSharedZones(_ body: JSONValue, _ scope: DatabaseScope) async throws -> JSONValue {
        let zones = try body.requiredArray("zones").map { entry in try ZoneID(json: entry["zoneID"] ?? entry) }
        var results: [JSONValue] = []
        for zone in zones {
            do {
                results.append(try await store.lookupSharedZone(scope, zone: zone).json)
            } catch var error as ServerError {
                error.zoneID = zone
                results.append(error.json())
            }
        }
        return ["zones": .array(results)]
    }

    /// Zones are neither created nor deleted through the shared database; a zone the caller cannot
    /// see answers `ZONE_NOT_FOUND` before the refusal, so a stranger learns nothing.
    func modifySharedZones(_ body: JSONValue, _ scope: DatabaseScope) async throws -> JSONValue {
        var results: [JSONValue] = []
        for operation in try body.requiredArray("operations") {
            guard let type = operation["operationType"]?.stringValue, type == "create" || type == "delete",
                let zoneJSON = operation["zone"]
            else { throw ServerError.badRequest("zone operationType must be create or delete, with a zone") }
            let zone = try ZoneID(json: zoneJSON["zoneID"] ?? zoneJSON)
            var error: ServerError
            if type == "create" {
                error = ServerError.badRequest("zones cannot be created in the shared database")
            } else {
                do {
                    _ = try await store.lookupSharedZone(scope, zone: zone)
                    error = ServerError(.accessDenied, "only the owner deletes a shared zone")
                } catch let refusal as ServerError {
                    error = refusal
                }
            }
            error.zoneID = zone
            results.append(error.json())
        }
        return ["zones": .array(results)]
    }
}
