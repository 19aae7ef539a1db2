import RecordModel
import RecordStore

/// The API's routes, declared once: the pages outside the databases, and under
/// `/database/1/{container}/{environment}/{database}/{operation…}` (and
/// `/device/1/{container}/{environment}/tokens/{operation}`) one handler per database and
/// operation, reached after the caller is authenticated.
extension RecordAPI {
    static let routes: APIRouteTable<RecordAPI> = {
        var table = APIRouteTable<RecordAPI>()
        let get: @Sendable (APIRequest) -> Bool = { $0.method == .get }
        table.add("/health", label: "health", .api { _, _ in APIResponse(status: 200, json: ["status": "ok"]) })
        table.add("/ready", label: "ready", .api { api, _ in await api.readinessResponse() })
        table.add("/metrics", label: "metrics", .api { api, _ in try await api.metricsResponse() })
        let console = Console.files
        for (path, file) in console {
            table.add(path, when: get, .api { _, _ in file })
        }
        table.add("/", when: get, .api { _, _ in SharePage.consoleRedirect })
        table.addTree("share", when: SharePage.isPageRequest, .api { _, _ in SharePage.pageAnswer })
        table.add(RecordAPI.signInPath, .api { api, request in try await api.signInResponse(request) })
        let database: APIRouteTable<RecordAPI>.Target = .api { api, request in try await api.answerDatabase(request) }
        table.addTree("database", label: { RecordAPI.operationLabel($0.path) }, database)
        table.addTree("device", label: { RecordAPI.operationLabel($0.path) }, database)
        table.addTree("assets", when: { $0.path.hasPrefix(AssetURLs.uploadPath) }, .assetUpload)
        table.addTree("assets", when: { $0.path.hasPrefix(AssetURLs.downloadPath) }, .assetDownload)
        return table
    }()

    /// Everything a database operation's handler gets: the request, its route, the
    /// authenticated caller and the scope it acts in.
    struct OperationCall: Sendable {
        var request: APIRequest
        var route: Route
        var user: User
        var scope: DatabaseScope
    }

    typealias OperationHandler = @Sendable (RecordAPI, OperationCall) async throws -> APIResponse

    /// A database and an operation in it (`private` and `records/modify`).
    struct OperationKey: Hashable, Sendable {
        var database: String
        var operation: String
    }

    /// The operations of an authenticated caller, by database. What is not here is answered by the
    /// database's fallback (`unknownOperation`).
    static let authenticatedOperations: [OperationKey: OperationHandler] = {
        var table: [OperationKey: OperationHandler] = [:]
        let json: (@escaping @Sendable (RecordAPI, OperationCall) async throws -> JSONValue) -> OperationHandler = { answer in
            { api, call in APIResponse(status: 200, json: try await answer(api, call)) }
        }
        table[OperationKey(database: "tokens", operation: "create")] = json { api, call in
            try await api.createToken(try api.parseBody(call.request, operation: "tokens/create"), call.scope, request: call.request)
        }
        table[OperationKey(database: "tokens", operation: "register")] = json { api, call in
            try await api.registerToken(try api.parseBody(call.request, operation: "tokens/register"), call.scope, request: call.request)
        }
        for database in ["private", "shared", "public"] {
            for operation in ["users/current", "users/caller"] {
                table[OperationKey(database: database, operation: operation)] = json { _, call in ["userRecordName": .string(call.user.recordName)] }
            }
        }
        table[OperationKey(database: "private", operation: "users/password")] = { api, call in
            try await api.changePassword(call.request, user: call.user)
        }
        for operation in linkedOperations.keys {
            table[OperationKey(database: "private", operation: operation)] = { api, call in try await api.performParsed(call) }
        }
        table[OperationKey(database: "private", operation: "webhooks/modify")] = json { api, call in
            try await api.modifyWebhooks(try api.parseBody(call.request, operation: "webhooks/modify"), call.scope)
        }
        table[OperationKey(database: "private", operation: "webhooks/list")] = json { api, call in try await api.listWebhooks(call.scope) }
        for (key, handler) in sharingOperations { table[key] = handler }
        return table
    }()

    /// A database route: the caller is authenticated (or the route needs no user), rate-limited,
    /// and handed to its operation.
    func answerDatabase(_ request: APIRequest) async throws -> APIResponse {
        let route = try parseRoute(request.path)
        if route.database == "public", RecordAPI.publicDatabaseOperations.contains(route.operation) {
            return try await answerPublic(request, route: route)
        }
        if let signed = SignedRequest(request) {
            if route.database == "public", route.operation == "users/current" || route.operation == "users/caller" {
                // A key acts as its own user, so the question has that user for an answer.
                let user = try await verifyServerKey(signed, request: request)
                return APIResponse(status: 200, json: ["userRecordName": .string(user.recordName)])
            }
            throw ServerError(.authenticationFailed, "server-to-server keys work on the public database only")
        }
        // The courier URL is its own credential (CloudKit JS polls it bare).
        if route.database == "courier", request.authorization == nil, request.webAuthToken == nil {
            return try await capabilityCourier(route, request: request)
        }
        var request = request
        let user: User
        if route.operation == "records/modify", request.method == .post {
            // The batch's body is read into drafts while its token is checked on the store's
            // read pool, so the check's thread hop and read cost the batch no time. Errors keep
            // their order: an unauthenticated request is refused as such, whatever its body.
            let unparsed = request
            async let checked = authenticate(unparsed)
            let body = request.body
            request.parsedModifyBody = ParsedModifyBody(Result { try ModifyRequestBody.parse(body) })
            user = try await checked
        } else {
            user = try await authenticate(request)
        }
        if request.authorization == nil { RequestCaller.noteWebAuthToken(request.webAuthToken) }
        if let wait = rateLimiter.acquire(userID: user.id) {
            throw ServerError(.throttled, "too many requests; retry after \(wait) s", retryAfter: wait)
        }
        let call = OperationCall(request: request, route: route, user: user,
                                 scope: DatabaseScope(user: user, container: route.container, environment: route.environment))
        // A courier's last segment is its channel's token, not an operation.
        if route.database == "courier" { return try await courier(token: route.operation, scope: call.scope, request: request) }
        if let handler = RecordAPI.authenticatedOperations[OperationKey(database: route.database, operation: route.operation)] {
            return try await handler(self, call)
        }
        return try await unknownOperation(call)
    }

    /// An operation no database route names, answered as each database always has: a token
    /// operation or a private or shared one that does not exist is `NOT_FOUND` (after its body is
    /// read, so a GET is told to POST), anything else in the public database is not served.
    private func unknownOperation(_ call: OperationCall) async throws -> APIResponse {
        switch call.route.database {
        case "tokens": throw ServerError(.notFound, "unknown operation 'tokens/\(call.route.operation.prefix(100))'")
        case "private": return try await performParsed(call)
        case "shared": return try await performParsed(sharedCall(call))
        default: throw ServerError.badRequest("the \(call.route.database) database is not supported yet; use private")
        }
    }

    /// The call with its scope turned to the shared database's.
    func sharedCall(_ call: OperationCall) -> OperationCall {
        var shared = call
        shared.scope = DatabaseScope(user: call.user, container: call.route.container, environment: call.route.environment, kind: .shared)
        return shared
    }

    /// A record, zone or subscription operation: its body read, then performed in the call's scope.
    func performParsed(_ call: OperationCall) async throws -> APIResponse {
        let body = try parseBody(call.request, operation: call.route.operation)
        return APIResponse(status: 200, json: try await perform(call.route.operation, body: body, scope: call.scope, request: call.request))
    }

    /// A bounded label for metrics: the API operation, or `other`.
    static func operationLabel(_ path: String) -> String {
        let parts = path.split(separator: "/")
        guard parts.count >= 6 else { return "other" }
        if parts[4] == "courier" { return "courier" }
        let operation = parts[4] == "tokens" ? "tokens/\(parts[5])" : parts[5...].joined(separator: "/")
        return knownOperations.contains(operation) ? operation : "other"
    }

    static let knownOperations: Set<String> = Set(linkedOperations.keys)
        .union(["users/current", "users/caller", "tokens/create", "tokens/register", "webhooks/modify", "webhooks/list"])
        .union(sharingOperationNames)
}
