import HTTPTypes
import Hummingbird
import RecordModel
import RecordStore

/// The API's routes, declared once on Hummingbird's router: the pages outside the databases, the
/// asset URLs, and under `/database/1/{container}/{environment}/{database}/` (and
/// `/device/1/{container}/{environment}/tokens/`) one route per operation, behind the middleware
/// that authenticates its caller. Adding an endpoint is one route and its handler.
extension RecordAPI {
    /// The daemon's router. Every request passes, outermost first: CORS, the request log and
    /// metrics, the rendering of errors, compression; then its route's own middleware.
    package func router(configuration: HTTPServerConfiguration) -> Router<ConnectionRequestContext> {
        let router = Router(context: ConnectionRequestContext.self)
        let labels = EndpointLabels()
        router.add(middleware: CrossOriginMiddleware(policy: configuration.crossOrigin))
        router.add(middleware: RequestLogMiddleware(api: self, trustedProxies: configuration.trustedProxies, labels: labels))
        router.add(middleware: ErrorAnswerMiddleware(api: self))
        router.add(middleware: CompressionMiddleware(maximumBodyBytes: configuration.maximumBodyBytes, counters: metrics.compression))
        let routes = APIRoutes(routerGroup: router.group(), labels: labels)
        let maximumBodyBytes = configuration.maximumBodyBytes

        routes.add("health", label: "health") { _, _ in Response(APIResponse(status: 200, json: ["status": "ok"])) }
        routes.add("ready", label: "ready") { _, _ in Response(await self.readinessResponse()) }
        routes.add("metrics", label: "metrics") { _, _ in Response(try await self.metricsResponse()) }
        for (path, file) in Console.files {
            routes.add(path, methods: [.get]) { _, _ in Response(file) }
        }
        routes.add("", methods: [.get]) { _, _ in Response(SharePage.consoleRedirect) }
        // A share link opened in a browser; API clients get the API's 404.
        routes.add("share/**", methods: [.get]) { request, context in
            guard SharePage.isPageRequest(context.facts) else { throw ServerError.noSuchEndpoint(request.uri.path) }
            return Response(SharePage.pageAnswer)
        }
        routes.add(RecordAPI.signInPath) { request, context in
            Response(try await self.signInResponse(context.facts, body: try await RecordAPI.collectBody(request, upTo: maximumBodyBytes)))
        }
        // Asset bytes are streamed, never collected.
        routes.add("assets/1/upload/**", label: "assets/put") { request, _ in try await AssetTransfer(api: self).upload(request) }
        routes.add("assets/1/download/**", label: "assets/get") { request, _ in try await AssetTransfer(api: self).download(request) }

        let address = DatabaseAddressMiddleware(maximumBodyBytes: maximumBodyBytes)
        let database = routes.group("database/1/:container/:environment", address)
        addDatabaseOperations(database)
        // CloudKit clients call the push-token operations under `/device/1/`; they answer under `/database/1/` too.
        addTokenOperations(routes.group("device/1/:container/:environment", address).database("tokens", api: self))
        return router
    }

    /// Every operation of the private, shared and public databases, the courier URL and the
    /// databases that do not exist.
    private func addDatabaseOperations(_ database: APIRoutes) {
        let privateDatabase = database.database("private", api: self)
        let sharedDatabase = database.database("shared", api: self)
        let publicDatabase = database.database("public", api: self)
        addTokenOperations(database.database("tokens", api: self))

        // Who the caller is; on the public database a server-to-server key is its own user.
        for operations in [privateDatabase, sharedDatabase, publicDatabase] {
            for operation in ["users/current", "users/caller"] {
                operations.add(operation, operations.name == "public" ? .userOrServerKey : .user, body: .unread) { _, call in
                    ["userRecordName": .string(call.scope.userRecordName)]
                }
            }
        }
        privateDatabase.add("users/password") { api, call in try await api.changePassword(call.body, user: try call.signedInUser()) }
        privateDatabase.add("webhooks/modify") { api, call in try await api.modifyWebhooks(call.body, call.scope) }
        privateDatabase.add("webhooks/list", body: .unread) { api, call in try await api.listWebhooks(call.scope) }

        // The record, zone, change, subscription and asset operations: the private database's, the
        // shared database's (in the zones shared with the caller) and the public database's.
        let recordOperations: [(name: String, body: DatabaseOperation.Body, anonymousRead: Bool, handler: DatabaseOperation.Handler)] = [
            ("assets/upload", .json(acceptsGet: false), false, { api, call in try await api.requestAssetUploads(call.body, call.scope, request: call.facts) }),
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
                guard let modify = try call.parsedModifyBody?.take().map({ try $0.get() }) ?? ModifyRequestBody.parse(call.bodyBytes) else {
                    throw ServerError.badRequest("the request body must be a JSON object")
                }
                // An empty X-Device-ID names no device.
                return try await api.modifyRecords(consume modify, call.scope, deviceID: call.facts.deviceID.flatMap { $0.isEmpty ? nil : $0 })
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
            privateDatabase.add(operation.name, body: operation.body, answersRecords: true, operation.handler)
            // The shared database looks up and changes its zones its own way (below).
            if operation.name != "zones/lookup" && operation.name != "zones/modify" {
                sharedDatabase.add(operation.name, body: operation.body, answersRecords: true, operation.handler)
            }
            publicDatabase.add(operation.name, .publicDatabase(anonymousRead: operation.anonymousRead), body: operation.body, answersRecords: true,
                               operation.handler)
        }

        // Sharing: the shared database's invitations and own zone operations, the share links and
        // user discovery under `/public/`.
        sharedDatabase.add("invitations/list") { api, call in ["invitations": .array(try await api.store.invitations(call.scope))] }
        sharedDatabase.add("invitations/decline") { api, call in try await api.declineInvitations(call.body, call.scope) }
        sharedDatabase.add("zones/lookup") { api, call in try await api.lookupSharedZones(call.body, call.scope) }
        sharedDatabase.add("zones/modify") { api, call in try await api.modifySharedZones(call.body, call.scope) }
        for operation in ["records/resolve", "records/accept", "records/accepts"] {
            publicDatabase.add(operation) { api, call in try await api.resolveShares(call.body, call.scope, accept: operation != "records/resolve") }
        }
        for operation in ["users/discover", "users/lookup/email"] {
            publicDatabase.add(operation) { api, call in try await api.discoverUsers(call.body, byEmailList: operation == "users/lookup/email") }
        }
        for operations in [privateDatabase, sharedDatabase, publicDatabase] { operations.addUnknownOperations() }

        // The courier URL: its last segment is its channel's token, not an operation.
        database.group("courier", AuthenticationMiddleware(api: self, caller: .courier, database: "courier", operation: "courier"))
            .add("**", label: "courier") { request, context in
                let token = String(RecordAPI.operationPath(request.uri.path))
                let answer: APIResponse
                if let scope = context.scope {
                    answer = try await self.courier(token: token, scope: scope, request: context.facts)
                } else {
                    answer = try await self.capabilityCourier(token: token, address: context.address, request: context.facts)
                }
                return try self.courierResponse(answer, context: context)
            }
        database.add(":database/**") { _, context in
            throw ServerError(.notFound, "no such database '\((context.parameters.get("database") ?? "").prefix(100))'")
        }
    }

    private func addTokenOperations(_ tokens: DatabaseRoutes) {
        tokens.add("create") { api, call in try await api.createToken(call.body, call.scope, request: call.facts) }
        tokens.add("register") { api, call in try await api.registerToken(call.body, call.scope, request: call.facts) }
        tokens.addUnknownOperations()
    }

    /// Runs `operation` once its caller is known (`context.scope`): its body read as it declares,
    /// then its handler (through `perform` for one that answers records).
    func run(_ operation: DatabaseOperation, context: ConnectionRequestContext) async throws -> Response {
        guard let scope = context.scope else { throw ServerError(.internalError, "\(operation.name) was reached without a caller") }
        var call = OperationCall(facts: context.facts, operation: operation.operation, user: context.user, scope: scope, bodyBytes: context.body,
                                 parsedModifyBody: context.parsedModifyBody)
        call.body = try readBody(context.facts.method, context.body, operation: operation.name, as: operation.body)
        let answer = operation.answersRecords ? try await perform(operation, call) : try await operation.handler(self, call)
        return Response(APIResponse(status: 200, json: answer))
    }

    /// An operation no route names, answered as each database always has: a token operation or a
    /// private or shared one that does not exist is `NOT_FOUND` (after its body is read, so a GET
    /// is told to POST), anything else in the public database is not served.
    func unknownOperation(database: String, context: ConnectionRequestContext) throws -> Response {
        let operation = RecordAPI.operationPath(context.facts.path).prefix(100)
        switch database {
        case "private", "shared":
            _ = try readBody(context.facts.method, context.body, operation: String(operation), as: .json(acceptsGet: false))
            throw ServerError(.notFound, "unknown operation '\(operation)'")
        case "tokens": throw ServerError(.notFound, "unknown operation 'tokens/\(operation)'")
        default: throw ServerError.badRequest("the \(database) database is not supported yet; use private")
        }
    }

    /// What follows `/database/1/{container}/{environment}/{database}/` in `path` (an unknown
    /// operation's name, a courier's token).
    static func operationPath(_ path: String) -> Substring {
        var rest = Substring(path)
        for _ in 0..<6 {
            guard let slash = rest.firstIndex(of: "/") else { return "" }
            rest = rest[rest.index(after: slash)...]
        }
        return rest
    }

    /// A body read whole, up to `limit`; beyond it (or when a gzip body does not inflate) the
    /// request is refused and its connection closed, since the rest of the body is never read.
    static func collectBody(_ request: Request, upTo limit: Int) async throws -> [UInt8] {
        do {
            return Array(buffer: try await request.body.collect(upTo: limit))
        } catch {
            // A ServerError comes from inflating a gzip body (corrupt, or inflating past the limit).
            throw RefusedRequest.closingConnection(error as? ServerError ?? ServerError(.limitExceeded, "request body is larger than \(limit) bytes"))
        }
    }
}

/// Everything a database operation's handler gets: the request's facts and body, the caller and
/// the scope it acts in.
struct OperationCall: Sendable {
    var facts: RequestFacts
    /// The operation's path in its database (`records/modify`, `create`).
    var operation: String
    /// The caller, for the operations that act as a user (nil for the public database's record
    /// operations, which act in `scope` as whoever it says).
    var user: User?
    var scope: DatabaseScope
    /// The JSON body as the operation reads it (`DatabaseOperation.Body`); empty for a GET or a body it leaves unread.
    var body: JSONValue = [:]
    /// The body's bytes as they came.
    var bodyBytes: [UInt8]
    var parsedModifyBody: ParsedModifyBody?

    init(facts: RequestFacts, operation: String, user: User?, scope: DatabaseScope, bodyBytes: [UInt8], parsedModifyBody: ParsedModifyBody?) {
        self.facts = facts
        self.operation = operation
        self.user = user
        self.scope = scope
        self.bodyBytes = bodyBytes
        self.parsedModifyBody = parsedModifyBody
    }

    /// The signed-in caller, for an operation that serves users only.
    func signedInUser() throws -> User {
        guard let user else { throw ServerError(.authenticationRequired, "\(operation) needs a user: send a token") }
        return user
    }
}

/// A database operation: who may call it, how its body is read, and its handler.
struct DatabaseOperation: Sendable {
    typealias Handler = @Sendable (RecordAPI, OperationCall) async throws -> JSONValue

    enum Caller: Sendable, Equatable {
        /// A user, by bearer or web auth token; in the shared database, acting on what is shared with it.
        case user
        /// A user, or a server-to-server key acting as its user.
        case userOrServerKey
        /// The public database's callers: a user, a server-to-server key acting as its user, or
        /// for a read (`anonymousRead`) a request with only a valid API token.
        case publicDatabase(anonymousRead: Bool)
        /// A courier URL: a user's own channel with credentials, any channel without (the URL is its credential).
        case courier
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

    /// The operation's path in its database (`records/modify`, `create`).
    var operation: String
    /// As errors and metrics name it: `records/modify`, `tokens/create`.
    var name: String
    var body: Body
    /// Answers with records: run by `perform`, which gives their assets download URLs and
    /// writes numbers as strings when asked.
    var answersRecords: Bool
    var handler: Handler
}

/// The routes of one group, with its path: each route's metrics label is noted under the endpoint
/// the router names it by (`EndpointLabels`).
struct APIRoutes {
    typealias Context = ConnectionRequestContext
    /// Every method: a route answers a method it does not serve itself ("use GET or POST"), as the
    /// API always has; the router's own 404 is for paths no route takes.
    static let anyMethod: [HTTPRequest.Method] = [.get, .post, .put, .delete, .patch, .head, .options]

    let routerGroup: RouterGroup<Context>
    var path: [String] = []
    let labels: EndpointLabels

    /// A group under `path`, behind `middleware`.
    func group(_ path: String, _ middleware: any MiddlewareProtocol<Request, Response, Context>...) -> APIRoutes {
        let group = routerGroup.group(RouterPath(path))
        for middleware in middleware { group.add(middleware: middleware) }
        return APIRoutes(routerGroup: group, path: self.path + [path], labels: labels)
    }

    /// One route: `path` (in this group) for `methods`, counted in the metrics as `label`.
    func add(_ path: String, methods: [HTTPRequest.Method] = APIRoutes.anyMethod, label: String = "other",
             _ handler: @escaping @Sendable (Request, Context) async throws -> Response) {
        labels.note(RouterPath((self.path + [path]).joined(separator: "/")).description, label)
        for method in methods { routerGroup.on(RouterPath(path), method: method, use: handler) }
    }

    /// The operations of `name` (`private`, `tokens`…) in this group.
    func database(_ name: String, api: RecordAPI) -> DatabaseRoutes {
        DatabaseRoutes(routes: group(name), name: name, api: api)
    }
}

/// One database's operations: each a route behind the middleware that authenticates its caller
/// as it declares.
final class DatabaseRoutes {
    let routes: APIRoutes
    let name: String
    let api: RecordAPI
    private var operations: Set<String> = []

    init(routes: APIRoutes, name: String, api: RecordAPI) {
        self.routes = routes
        self.name = name
        self.api = api
    }

    func add(_ operation: String, _ caller: DatabaseOperation.Caller = .user, body: DatabaseOperation.Body = .json(acceptsGet: false),
             answersRecords: Bool = false, _ handler: @escaping DatabaseOperation.Handler) {
        operations.insert(operation)
        let name = self.name == "tokens" ? "tokens/\(operation)" : operation
        let declared = DatabaseOperation(operation: operation, name: name, body: body, answersRecords: answersRecords, handler: handler)
        let authentication = AuthenticationMiddleware(api: api, caller: caller, database: self.name, operation: operation,
                                                      readsRecordDrafts: body == .recordDrafts)
        let api = self.api
        routes.group(operation, authentication).add("", label: name) { _, context in try await api.run(declared, context: context) }
    }

    /// What no operation names, after the caller is authenticated as a user: every other path in
    /// the database, and the paths an operation's name passes through (`records`), which the
    /// router would otherwise answer with its own 404.
    func addUnknownOperations() {
        var prefixes: Set<String> = []
        for operation in operations {
            var parts = operation.split(separator: "/").dropLast()
            while !parts.isEmpty {
                prefixes.insert(parts.joined(separator: "/"))
                parts = parts.dropLast()
            }
        }
        let authentication = AuthenticationMiddleware(api: api, caller: .user, database: name, operation: "")
        let unknown = routes.group("", authentication)
        let (api, name) = (self.api, self.name)
        for path in prefixes.subtracting(operations).sorted() + ["**"] {
            unknown.add(path) { _, context in try api.unknownOperation(database: name, context: context) }
        }
    }
}
