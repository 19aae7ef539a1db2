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

    /// Everything a database operation's handler gets: the request, its route and body, the caller
    /// and the scope it acts in.
    struct OperationCall: Sendable {
        var request: APIRequest
        var route: Route
        /// The caller, for the operations that act as a user (nil for the public database's record
        /// operations, which act in `scope` as whoever it says).
        var user: User?
        var scope: DatabaseScope
        /// The JSON body as the operation reads it (`DatabaseOperation.Body`); empty for a GET or a body it leaves unread.
        var body: JSONValue = [:]

        /// The signed-in caller, for an operation that serves users only.
        func signedInUser() throws -> User {
            guard let user else { throw ServerError(.authenticationRequired, "\(route.operation) needs a user: send a token") }
            return user
        }
    }

    /// A database operation: who may call it, how its body is read, and its handler.
    struct DatabaseOperation: Sendable {
        enum Caller: Sendable, Equatable {
            /// A user, by bearer or web auth token; in the shared database, acting on what is shared with it.
            case user
            /// A user, or a server-to-server key acting as its user.
            case userOrServerKey
            /// The public database's callers: a user, a server-to-server key acting as its user, or
            /// for a read (`anonymousRead`) a request with only a valid API token.
            case publicDatabase(anonymousRead: Bool)
        }

        enum Body: Sendable, Equatable {
            /// Not read; any method is answered.
            case unread
            /// A JSON object, POSTed; `acceptsGet`: a GET too, as an empty body.
            case json(acceptsGet: Bool)
            /// POSTed, and read straight into record drafts (`ModifyRequestBody`) while the caller
            /// is authenticated (`records/modify`).
            case recordDrafts
        }

        var caller: Caller
        var body: Body
        /// Answers with records: run by `perform`, which gives their assets download URLs and
        /// writes numbers as strings when asked.
        var answersRecords = false
        var handler: @Sendable (RecordAPI, OperationCall) async throws -> JSONValue
    }

    /// A database and an operation in it (`private` and `records/modify`).
    struct OperationKey: Hashable, Sendable {
        var database: String
        var operation: String

        /// The operation as errors and metrics name it: `records/modify`, `tokens/create`.
        var operationName: String { database == "tokens" ? "tokens/\(operation)" : operation }
    }

    /// Every operation under `/database/1/{container}/{environment}/{database}/` (and the
    /// `tokens` ones under `/device/1/…`), by database and name: the one place an operation is
    /// declared. What is not here is answered by its database's fallback (`unknownOperation`); a
    /// courier's path names a channel, not an operation (`answerDatabase`).
    static let databaseOperations: [OperationKey: DatabaseOperation] = {
        var table: [OperationKey: DatabaseOperation] = [:]
        func add(_ database: String, _ operation: String, _ caller: DatabaseOperation.Caller = .user, body: DatabaseOperation.Body = .json(acceptsGet: false),
                 answersRecords: Bool = false, _ handler: @escaping @Sendable (RecordAPI, OperationCall) async throws -> JSONValue) {
            table[OperationKey(database: database, operation: operation)] =
                DatabaseOperation(caller: caller, body: body, answersRecords: answersRecords, handler: handler)
        }

        add("tokens", "create") { api, call in try await api.createToken(call.body, call.scope, request: call.request) }
        add("tokens", "register") { api, call in try await api.registerToken(call.body, call.scope, request: call.request) }

        // Who the caller is; on the public database a server-to-server key is its own user.
        for database in ["private", "shared", "public"] {
            for operation in ["users/current", "users/caller"] {
                add(database, operation, database == "public" ? .userOrServerKey : .user, body: .unread) { _, call in
                    ["userRecordName": .string(call.scope.userRecordName)]
                }
            }
        }
        add("private", "users/password") { api, call in try await api.changePassword(call.body, user: try call.signedInUser()) }
        add("private", "webhooks/modify") { api, call in try await api.modifyWebhooks(call.body, call.scope) }
        add("private", "webhooks/list", body: .unread) { api, call in try await api.listWebhooks(call.scope) }

        // The record, zone, change, subscription and asset operations: the private database's, the
        // shared database's (in the zones shared with the caller) and the public database's.
        let recordOperations: [(name: String, body: DatabaseOperation.Body, anonymousRead: Bool, handler: @Sendable (RecordAPI, OperationCall) async throws -> JSONValue)] = [
            ("assets/upload", .json(acceptsGet: false), false, { api, call in try await api.requestAssetUploads(call.body, call.scope, request: call.request) }),
            ("zones/list", .json(acceptsGet: true), true, { api, call in try await api.listZones(call.scope) }),
            ("zones/lookup", .json(acceptsGet: false), true, { api, call in try await api.lookupZones(call.body, call.scope) }),
            ("zones/modify", .json(acceptsGet: false), false, { api, call in
                // The whole request is refused where zones cannot be made, as CloudKit answers it
                // (the public database has `_defaultZone` only).
                try ZoneRules.checkCreation(call.scope)
                return try await api.modifyZones(call.body, call.scope)
            }),
            ("zones/changes", .json(acceptsGet: false), true, { api, call in try await api.databaseChanges(call.body, call.scope, metaSyncToken: true) }),
            ("changes/database", .json(acceptsGet: false), true, { api, call in try await api.databaseChanges(call.body, call.scope, metaSyncToken: false) }),
            ("records/modify", .recordDrafts, false, { api, call in
                guard let modify = try call.request.parsedModifyBody?.take().map({ try $0.get() }) ?? ModifyRequestBody.parse(call.request.body) else {
                    throw ServerError.badRequest("the request body must be a JSON object")
                }
                // An empty X-Device-ID names no device.
                return try await api.modifyRecords(consume modify, call.scope, deviceID: call.request.deviceID.flatMap { $0.isEmpty ? nil : $0 })
            }),
            ("records/lookup", .json(acceptsGet: false), true, { api, call in try await api.lookupRecords(call.body, call.scope) }),
            ("records/query", .json(acceptsGet: false), true, { api, call in try await api.queryRecords(call.body, call.scope) }),
            ("records/changes", .json(acceptsGet: false), true, { api, call in try await api.recordChanges(call.body, call.scope) }),
            ("changes/zone", .json(acceptsGet: false), true, { api, call in try await api.zoneChanges(call.body, call.scope) }),
            ("subscriptions/modify", .json(acceptsGet: false), false, { api, call in try await api.modifySubscriptions(call.body, call.scope) }),
            ("subscriptions/list", .json(acceptsGet: true), false, { api, call in try await api.listSubscriptions(call.scope) }),
            ("subscriptions/lookup", .json(acceptsGet: false), false, { api, call in try await api.lookupSubscriptions(call.body, call.scope) }),
        ]
        for operation in recordOperations {
            add("private", operation.name, body: operation.body, answersRecords: true, operation.handler)
            // The shared database looks up and changes its zones its own way (below).
            if operation.name != "zones/lookup" && operation.name != "zones/modify" {
                add("shared", operation.name, body: operation.body, answersRecords: true, operation.handler)
            }
            add("public", operation.name, .publicDatabase(anonymousRead: operation.anonymousRead), body: operation.body, answersRecords: true,
                operation.handler)
        }

        // Sharing: the shared database's invitations and own zone operations, the share links and
        // user discovery under `/public/`.
        add("shared", "invitations/list") { api, call in ["invitations": .array(try await api.store.invitations(call.scope))] }
        add("shared", "invitations/decline") { api, call in try await api.declineInvitations(call.body, call.scope) }
        add("shared", "zones/lookup") { api, call in try await api.lookupSharedZones(call.body, call.scope) }
        add("shared", "zones/modify") { api, call in try await api.modifySharedZones(call.body, call.scope) }
        for operation in ["records/resolve", "records/accept", "records/accepts"] {
            add("public", operation) { api, call in try await api.resolveShares(call.body, call.scope, accept: operation != "records/resolve") }
        }
        for operation in ["users/discover", "users/lookup/email"] {
            add("public", operation) { api, call in try await api.discoverUsers(call.body, byEmailList: operation == "users/lookup/email") }
        }
        return table
    }()

    /// A database route: the caller is authenticated as its operation asks, rate-limited, and
    /// handed to the operation.
    func answerDatabase(_ request: APIRequest) async throws -> APIResponse {
        let route = try parseRoute(request.path)
        let operation = RecordAPI.databaseOperations[OperationKey(database: route.database, operation: route.operation)]
        if let operation, case .publicDatabase(let anonymousRead) = operation.caller {
            return try await answerPublic(request, route: route, operation: operation, anonymousRead: anonymousRead)
        }
        if let signed = SignedRequest(request) {
            guard let operation, operation.caller == .userOrServerKey else {
                throw ServerError(.authenticationFailed, "server-to-server keys work on the public database only")
            }
            // A key acts as its own user.
            let user = try await verifyServerKey(signed, request: request)
            return try await run(operation, OperationCall(request: request, route: route, user: user,
                                                          scope: DatabaseScope(user: user, container: route.container, environment: route.environment)))
        }
        // The courier URL is its own credential (CloudKit JS polls it bare).
        if route.database == "courier", request.authorization == nil, request.webAuthToken == nil {
            return try await capabilityCourier(route, request: request)
        }
        var request = request
        let user: User
        if operation?.body == .recordDrafts, request.method == .post {
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
        // The shared database's operations act on the zones shared with the caller.
        let scope = DatabaseScope(user: user, container: route.container, environment: route.environment,
                                  kind: route.database == "shared" ? .shared : .private)
        let call = OperationCall(request: request, route: route, user: user, scope: scope)
        // A courier's last segment is its channel's token, not an operation.
        if route.database == "courier" { return try await courier(token: route.operation, scope: call.scope, request: request) }
        guard let operation else { return try await unknownOperation(call) }
        return try await run(operation, call)
    }

    /// Runs `operation` once its caller is known: its body read as it declares, then its handler
    /// (through `perform` for one that answers records).
    func run(_ operation: DatabaseOperation, _ call: OperationCall) async throws -> APIResponse {
        var call = call
        call.body = try readBody(call.request, operation: call.route.operationName, as: operation.body)
        let answer = operation.answersRecords ? try await perform(operation, call) : try await operation.handler(self, call)
        return APIResponse(status: 200, json: answer)
    }

    /// An operation no database route names, answered as each database always has: a token
    /// operation or a private or shared one that does not exist is `NOT_FOUND` (after its body is
    /// read, so a GET is told to POST), anything else in the public database is not served.
    private func unknownOperation(_ call: OperationCall) async throws -> APIResponse {
        switch call.route.database {
        case "private", "shared":
            _ = try readBody(call.request, operation: call.route.operationName, as: .json(acceptsGet: false))
            throw ServerError(.notFound, "unknown operation '\(call.route.operation.prefix(100))'")
        case "tokens": throw ServerError(.notFound, "unknown operation 'tokens/\(call.route.operation.prefix(100))'")
        default: throw ServerError.badRequest("the \(call.route.database) database is not supported yet; use private")
        }
    }

    /// A bounded label for metrics: the API operation, or `other`.
    static func operationLabel(_ path: String) -> String {
        let parts = path.split(separator: "/")
        guard parts.count >= 6 else { return "other" }
        if parts[4] == "courier" { return "courier" }
        let operation = parts[4] == "tokens" ? "tokens/\(parts[5])" : parts[5...].joined(separator: "/")
        return operationLabels.contains(operation) ? operation : "other"
    }

    /// Every operation's name, as the metrics label it (`tokens/create`, `records/modify`).
    static let operationLabels: Set<String> = Set(databaseOperations.keys.map(\.operationName))
}
