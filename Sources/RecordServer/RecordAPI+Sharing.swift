import RecordModel
import RecordStore

// The sharing endpoints: `/shared/` (the zones other users shared with the caller,
// served by the same store operations with a scope of kind `.shared`), the share links under
// `/public/records/resolve|accept`, and user discovery under `/public/users/`. Access is decided
// in the store's transactions; these routes only decode and encode.
extension RecordAPI {
    static let sharingOperations: Set<String> = [
        "records/resolve", "records/accept", "records/accepts", "users/discover", "users/lookup/email", "invitations/list",
    ]

    /// The answer when `route` is a sharing endpoint or addresses the shared database; nil otherwise.
    func sharingResponse(_ route: Route, request: APIRequest, user: User) async throws -> APIResponse? {
        let scope = DatabaseScope(user: user, container: route.container, environment: route.environment,
                                  kind: route.database == "shared" ? .shared : .private)
        switch (route.database, route.operation) {
        case ("public", "records/resolve"), ("public", "records/accept"), ("public", "records/accepts"):
            let body = try parseBody(request, operation: route.operation)
            return APIResponse(status: 200, json: try await resolveShares(body, scope, accept: route.operation != "records/resolve"))
        case ("public", "users/discover"), ("public", "users/lookup/email"):
            let body = try parseBody(request, operation: route.operation)
            return APIResponse(status: 200, json: try await discoverUsers(body, byEmailList: route.operation == "users/lookup/email"))
        case ("shared", _):
            let body = try parseBody(request, operation: route.operation)
            switch route.operation {
            case "invitations/list":
                return APIResponse(status: 200, json: ["invitations": .array(try await store.invitations(scope))])
            case "zones/lookup":
                return APIResponse(status: 200, json: try await lookupSharedZones(body, scope))
            case "zones/modify":
                return APIResponse(status: 200, json: try await modifySharedZones(body, scope))
            default:
                return APIResponse(status: 200, json: try await perform(route.operation, body: body, scope: scope, request: request))
            }
        default:
            return nil
        }
    }

    func resolveShares(_ body: JSONValue, _ scope: DatabaseScope, accept: Bool) async throws -> JSONValue {
        let guids = try body.requiredArray("shortGUIDs").map { entry -> String in
            guard let value = entry["value"]?.stringValue ?? entry.stringValue else {
                throw ServerError.badRequest("every shortGUID needs a string value")
            }
            return value
        }
        let results = try await store.resolveShares(scope, shortGUIDs: guids, accept: accept)
        return ["results": .array(results.map { result in
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
