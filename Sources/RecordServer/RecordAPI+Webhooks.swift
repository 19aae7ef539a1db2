import RecordModel
import RecordStore

/// `webhooks/modify` and `webhooks/list` on the private database: a user's own endpoints, which
/// receive the changes of that user's zones in the request's container and environment (an
/// operator's, made with `scorebookd webhook add`, may cover whole containers).
extension RecordAPI {
    /// At most this many endpoints per user.
    static let maximumWebhooksPerUser = 20

    /// `{"operations": [{"operationType": "create", "webhook": {"url", "zoneID"?, "recordType"?, "events"?, "fields"?}}
    /// | {"operationType": "delete", "webhook": {"webhookID"}}]}` → `{"webhooks": [webhook (with its secret, once) | error]}`.
    func modifyWebhooks(_ body: JSONValue, _ scope: DatabaseScope) async throws -> JSONValue {
        let operations = try body.requiredArray("operations")
        guard operations.count <= 20 else { throw ServerError(.limitExceeded, "at most 20 webhook operations per request") }
        var results: [JSONValue] = []
        var count = try await store.engine.webhooks(ownerUserID: scope.userID).count
        for operation in operations {
            guard let type = operation["operationType"]?.stringValue, type == "create" || type == "delete" else {
                throw ServerError.badRequest("webhook operationType must be create or delete")
            }
            guard let webhook = operation["webhook"] else { throw ServerError.badRequest("operation \(type) needs a webhook") }
            do {
                if type == "delete" {
                    guard let id = webhook["webhookID"]?.stringValue else { throw ServerError.badRequest("delete needs a webhookID") }
                    try await store.engine.removeWebhook(id: id, ownerUserID: scope.userID)
                    results.append(["webhookID": .string(id), "deleted": true])
                    count -= 1
                    continue
                }
                guard count < RecordAPI.maximumWebhooksPerUser else {
                    throw ServerError(.limitExceeded, "at most \(RecordAPI.maximumWebhooksPerUser) webhooks per user")
                }
                let created = try await store.engine.addWebhook(try ownersWebhook(webhook, scope))
                count += 1
                guard case .object(var members) = created.json else { continue }
                members["secret"] = .string(created.secret)
                results.append(.object(members))
            } catch let error as ServerError {
                results.append(error.json())
            }
        }
        return ["webhooks": .array(results)]
    }

    /// `webhooks/list` → `{"webhooks": [...]}`: the caller's endpoints, without their secrets.
    func listWebhooks(_ scope: DatabaseScope) async throws -> JSONValue {
        let own = try await store.engine.webhooks(ownerUserID: scope.userID)
            .filter { $0.container == scope.container && $0.environment == scope.environment }
        return ["webhooks": .array(own.map(\.json))]
    }

    /// A user's endpoint from its dictionary: the caller's private database in this container and
    /// environment, optionally one zone and one record type.
    private func ownersWebhook(_ definition: JSONValue, _ scope: DatabaseScope) throws -> Webhook {
        guard let url = definition["url"]?.stringValue else { throw ServerError.badRequest("a webhook needs a url") }
        let target = try WebhookTarget(url: url)
        if !allowsPrivateWebhooks, target.namesPrivateHost {
            throw ServerError.badRequest("webhook URLs on loopback, link-local or private addresses are refused by this server")
        }
        var webhook = Webhook(url: url, ownerUserID: scope.userID, container: scope.container, environment: scope.environment, database: .private)
        if let zone = definition["zoneID"] {
            guard let name = zone["zoneName"]?.stringValue else { throw ServerError.badRequest("zoneID needs a zoneName") }
            webhook.zone = name
        }
        if let type = definition["recordType"] {
            guard let name = type.stringValue, !name.isEmpty else { throw ServerError.badRequest("recordType must be a record type's name") }
            webhook.recordType = name
        }
        if let events = definition["events"] {
            guard case .array(let list) = events, !list.isEmpty else { throw ServerError.badRequest("events must be a list of changed and deleted") }
            webhook.events = try WebhookEventKind.parse(list.map { $0.stringValue ?? "?" }.joined(separator: ","))
        }
        switch definition["fields"] {
        case nil: break
        case .string(let text)?: webhook.fields = try WebhookFields.parse(text)
        case .array(let names)?:
            let names = names.compactMap(\.stringValue)
            guard !names.isEmpty else { throw ServerError.badRequest("fields must be none, all or a list of field names") }
            webhook.fields = .names(names)
        default: throw ServerError.badRequest("fields must be none, all or a list of field names")
        }
        return webhook
    }
}
