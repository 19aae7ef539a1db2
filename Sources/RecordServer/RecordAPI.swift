import Crypto
import Dispatch
import Foundation
import Logging
import RecordModel
import RecordStore
import Synchronization

/// The HTTP API (docs/api), as a function from request to response. Routes decode, call one
/// store operation, and encode; all the semantics live in the store.
package final class RecordAPI: Sendable {
    package let store: any RecordStorage
    package let pushHub: PushHub
    package let metrics = ServerMetrics()

    let rateLimiter: RateLimiter
    let logger: Logger
    /// `host:port` the server listens on: the courier URL's authority when a request has no
    /// Host header (HTTP/1.0).
    private let listeningAuthority = Mutex<String?>(nil)
    /// The store's download-URL key, read on first use.
    let assetKeyCache = Mutex<SymmetricKey?>(nil)
    /// Web sign-in's allowed origins and its failure counts (`RecordAPI+SignIn`).
    let signIn = SignInGate()

    /// Called by the server once its socket is bound.
    package func serverDidBind(host: String, port: Int) {
        let authority = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        listeningAuthority.withLock { $0 = authority }
        ShareRules.setLinkBase("http://\(authority)")
    }

    var boundAuthority: String? { listeningAuthority.withLock { $0 } }

    /// `requestsPerSecond` (with bursts of twice that) is the per-user rate limit.
    package init(store: any RecordStorage, requestsPerSecond: Double = 2000, logger: Logger = Logger(label: "scorebookd")) {
        self.store = store
        self.rateLimiter = RateLimiter(ratePerSecond: requestsPerSecond, burst: requestsPerSecond * 2)
        self.logger = logger
        let hub = PushHub(store: store)
        self.pushHub = hub
        store.setCommitObserver { hub.commitLanded($0) }
    }

    /// The parts of a `/database/1/{container}/{environment}/{database}/{operation}` path, or of
    /// `/device/1/{container}/{environment}/tokens/{operation}` (database `tokens`).
    struct Route {
        var container: String
        var environment: Environment
        var database: String
        var operation: String
    }

    static let knownOperations: Set<String> = Set([
        "zones/list", "zones/lookup", "zones/modify", "zones/changes", "changes/database", "changes/zone", "records/modify",
        "records/lookup", "records/query", "records/changes", "subscriptions/modify", "subscriptions/list", "subscriptions/lookup",
        "users/current", "users/caller", "tokens/create", "tokens/register", "assets/upload",
    ]).union(sharingOperations)

    /// Answers one request and counts it in the metrics under its operation.
    package func handle(_ request: APIRequest) async -> APIResponse {
        let started = ContinuousClock.now
        let requestID = UUID().uuidString.lowercased()
        var webAuthToken: String?
        let caller = RequestCaller()
        var response = await RequestCaller.$current.withValue(caller) {
            await ShareRules.$requestLinkBase.withValue(baseURL(request)) {
                await answer(request, requestID: requestID, authenticatedWebAuthToken: &webAuthToken)
            }
        }
        // CloudKit answers a ckWebAuthToken request with the token to use next; ours do not rotate.
        if let webAuthToken { response.headers.append((RecordAPI.webAuthTokenHeader, webAuthToken)) }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let operation = RecordAPI.operationLabel(request.path)
        metrics.record(operation: operation, status: response.status, seconds: seconds)
        if response.status == 503 { metrics.storeUnavailableAnswered() }
        // One structured line per request; errors at info so they show by default. The line's
        // metadata is made only when it is written (formatting it was a few microseconds a request).
        let level: Logger.Level = response.status >= 500 ? .error : response.status >= 400 ? .info : .debug
        if logger.logLevel <= level {
            let metadata: Logger.Metadata = [
                "request": .string(requestID), "operation": .string(operation), "status": .stringConvertible(response.status),
                "ms": .string(String(format: "%.2f", seconds * 1000)),
                "user": .string(caller.userRecordName ?? "-"), "client": .string(request.clientAddress ?? "-"),
            ]
            logger.log(level: level, level == .error ? "request failed" : level == .info ? "request rejected" : "request", metadata: metadata)
        }
        return response
    }

    /// A bounded label for metrics: the API operation, or `other`.
    static func operationLabel(_ path: String) -> String {
        if path == "/health" || path == "/ready" || path == "/metrics" { return String(path.dropFirst()) }
        let parts = path.split(separator: "/")
        guard parts.count >= 6 else { return "other" }
        if parts[4] == "courier" { return "courier" }
        let operation = parts[4] == "tokens" ? "tokens/\(parts[5])" : parts[5...].joined(separator: "/")
        return knownOperations.contains(operation) ? operation : "other"
    }

    static let webAuthTokenHeader = "X-Apple-CloudKit-Web-Auth-Token"

    /// `authenticatedWebAuthToken` is set once the request is authenticated by `ckWebAuthToken`.
    func answer(_ request: APIRequest, requestID uuid: String, authenticatedWebAuthToken: inout String?) async -> APIResponse {
        do {
            if request.path == "/health" { return APIResponse(status: 200, json: ["status": "ok"]) }
            if request.path == "/ready" { return await readinessResponse() }
            if request.path == "/metrics" { return try await metricsResponse() }
            if let console = Console.response(to: request) { return console }
            if let page = SharePage.response(to: request) { return page }
            if let page = try await signInResponse(request) { return page }
            let route = try parseRoute(request.path)
            if route.database == "public", RecordAPI.publicDatabaseOperations.contains(route.operation) {
                return try await answerPublic(request, route: route, authenticatedWebAuthToken: &authenticatedWebAuthToken)
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
            if request.authorization == nil { authenticatedWebAuthToken = request.webAuthToken }
            if let wait = rateLimiter.acquire(userID: user.id) {
                throw ServerError(.throttled, "too many requests; retry after \(wait) s", retryAfter: wait)
            }
            let scope = DatabaseScope(user: user, container: route.container, environment: route.environment)
            switch route.database {
            case "tokens":
                switch route.operation {
                case "create":
                    return APIResponse(status: 200, json: try await createToken(try parseBody(request, operation: "tokens/create"), scope, request: request))
                case "register":
                    return APIResponse(status: 200, json: try await registerToken(try parseBody(request, operation: "tokens/register"), scope, request: request))
                default:
                    throw ServerError(.notFound, "unknown operation 'tokens/\(route.operation.prefix(100))'")
                }
            case "courier":
                return try await courier(token: route.operation, scope: scope, request: request)
            default:
                break
            }
            if route.operation == "users/current" || route.operation == "users/caller" {
                return APIResponse(status: 200, json: ["userRecordName": .string(user.recordName)])
            }
            if route.database == "private", route.operation == "users/password" { return try await changePassword(request, user: user) }
            if let answer = try await sharingResponse(route, request: request, user: user) { return answer }
            guard route.database == "private" else {
                throw ServerError.badRequest("the \(route.database) database is not supported yet; use private")
            }
            let body = try parseBody(request, operation: route.operation)
            let json = try await perform(route.operation, body: body, scope: scope, request: request)
            return APIResponse(status: 200, json: json)
        } catch let error as ServerError {
            return .error(error, uuid: uuid, redirectURL: error.code == .authenticationRequired ? signInRedirectURL(request) : nil)
        } catch let error as JSONParseError {
            return .error(.badRequest(error.description), uuid: uuid)
        } catch {
            let answer = ServerError(storeFailure: error)
            logger.error("request failed: \(error)", metadata: ["request": .string(uuid), "serverErrorCode": .string(answer.code.rawValue)])
            return .error(answer, uuid: uuid)
        }
    }

    func metricsResponse() async throws -> APIResponse {
        // Without the store's figures while it cannot answer: the rest still tells what is happening.
        let statistics = try? await StoreTransactionRunner(deadline: RecordAPI.readinessDeadline).run { _ in try await self.store.statistics() }
        let storeGauges: [(String, String, Double)] = statistics.map { statistics in [
            ("scorebookd_records", "Live records in all zones.", Double(statistics.records)),
            ("scorebookd_zones", "Live zones in all databases.", Double(statistics.zones)),
            ("scorebookd_notifications_stored", "Notifications kept for delivery.", Double(statistics.notifications)),
        ] } ?? []
        let text = metrics.render(gauges: storeGauges + [
            ("scorebookd_subscribers_connected", "Open event streams.", Double(metrics.connectedEventStreams)),
            ("scorebookd_waiters", "Long-polls and event streams waiting for a commit.", Double(pushHub.waiterCount)),
            ("scorebookd_store_transactions_abandoned", "Store transactions given up at the request deadline and still running.",
             Double(StoreTransactionRunner.abandonedInFlight.load(ordering: .relaxed))),
            ("scorebookd_push_last_delivery_seconds",
             "From the last commit reaching the push hub to the last delivery written after it (the server's fan-out time).",
             pushHub.lastCommitToLastDeliverySeconds),
        ])
        return APIResponse(status: 200, text: text, contentType: "text/plain; version=0.0.4")
    }

    func parseRoute(_ path: String) throws -> Route {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let parts = Array(segments)
        // CloudKit clients call the push-token operations under `/device/1/`.
        guard parts.count >= 6, parts[0] == "database" || (parts[0] == "device" && parts[4] == "tokens"), parts[1] == "1" else {
            throw ServerError(.notFound, "no such endpoint: \(path.prefix(200))")
        }
        let container = String(parts[2])
        try DatabaseScope.validateContainer(container)
        guard let environment = Environment(rawValue: String(parts[3])) else {
            throw ServerError.badRequest("environment must be development or production")
        }
        let database = String(parts[4])
        guard ["private", "shared", "public", "tokens", "courier"].contains(database) else {
            throw ServerError(.notFound, "no such database '\(database.prefix(100))'")
        }
        return Route(container: container, environment: environment, database: database,
                     operation: parts[5...].joined(separator: "/"))
    }

    func authenticate(_ request: APIRequest) async throws -> User {
        if let header = request.authorization {
            // The scheme name is case-insensitive (RFC 9110, section 11.1).
            let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else {
                throw ServerError(.authenticationFailed, "Authorization must be 'Bearer TOKEN'")
            }
            let token = parts[1].trimmingCharacters(in: .whitespaces)
            guard let user = try await self.store.authenticate(bearerToken: token) else {
                throw ServerError(.authenticationFailed, "unknown or revoked token")
            }
            return RequestCaller.identified(user)
        }
        if let apiToken = request.query["ckAPIToken"], let webAuthToken = request.webAuthToken {
            guard let user = try await self.store.authenticate(apiToken: apiToken, webAuthToken: webAuthToken) else {
                throw ServerError(.authenticationFailed, "unknown or revoked ckAPIToken or ckWebAuthToken")
            }
            return RequestCaller.identified(user)
        }
        throw ServerError(.authenticationRequired, "send Authorization: Bearer TOKEN, or ckAPIToken and ckWebAuthToken")
    }

    static let getOperations: Set<String> = ["zones/list", "subscriptions/list", "users/current", "users/caller"]

    func parseBody(_ request: APIRequest, operation: String) throws -> JSONValue {
        switch request.method {
        case .get:
            guard RecordAPI.getOperations.contains(operation) else { throw ServerError.badRequest("\(operation) needs POST") }
            return [:]
        case .post:
            // records/modify reads its body itself, straight into record drafts (`ModifyRequestBody`).
            if operation == "records/modify" { return [:] }
            if JSONValue.isBlank(request.body) { return [:] }
            let json = try JSONValue.parse(request.body)
            guard case .object = json else { throw ServerError.badRequest("the request body must be a JSON object") }
            return json
        case .other:
            throw ServerError.badRequest("use GET or POST")
        }
    }

    func perform(_ operation: String, body: JSONValue, scope: DatabaseScope, request: APIRequest) async throws -> JSONValue {
        // Records answered carry a download URL for each asset, made for this caller.
        let answer = try await withAssetLinks(scope, request: request) {
            try await performLinked(operation, body: body, scope: scope, request: request)
        }
        return RecordAPI.asksNumbersAsStrings(body, request: request, operation: operation) ? try RecordAPI.numbersAsStrings(answer) : answer
    }

    private func performLinked(_ operation: String, body: JSONValue, scope: DatabaseScope, request: APIRequest) async throws -> JSONValue {
        switch operation {
        case "assets/upload": return try await requestAssetUploads(body, scope, request: request)
        case "zones/list": return try await listZones(scope)
        case "zones/lookup": return try await lookupZones(body, scope)
        case "zones/modify": return try await modifyZones(body, scope)
        case "zones/changes": return try await databaseChanges(body, scope, metaSyncToken: true)
        case "changes/database": return try await databaseChanges(body, scope, metaSyncToken: false)
        case "records/modify":
            // An empty X-Device-ID names no device.
            // Read straight from the bytes (`parseBody` leaves this body to it).
            guard let modify = try request.parsedModifyBody?.take().map({ try $0.get() }) ?? ModifyRequestBody.parse(request.body) else {
                throw ServerError.badRequest("the request body must be a JSON object")
            }
            return try await modifyRecords(consume modify, scope, deviceID: request.deviceID.flatMap { $0.isEmpty ? nil : $0 })
        case "records/lookup": return try await lookupRecords(body, scope)
        case "records/query": return try await queryRecords(body, scope)
        case "records/changes": return try await recordChanges(body, scope)
        case "changes/zone": return try await zoneChanges(body, scope)
        case "subscriptions/modify": return try await modifySubscriptions(body, scope)
        case "subscriptions/list": return try await listSubscriptions(scope)
        case "subscriptions/lookup": return try await lookupSubscriptions(body, scope)
        default: throw ServerError(.notFound, "unknown operation '\(operation.prefix(100))'")
        }
    }
}

// MARK: Request decoding helpers

extension JSONValue {
    /// An optional integer member; present but not an integer is `BAD_REQUEST`.
    func optionalInt(_ key: String) throws -> Int? {
        guard let value = self[key], !value.isNull else { return nil }
        guard let i = value.int64Value, i >= 0, i <= Int64(Int32.max) else { throw ServerError.badRequest("\(key) must be a non-negative integer") }
        return Int(i)
    }

    func optionalString(_ key: String) throws -> String? {
        guard let value = self[key], !value.isNull else { return nil }
        guard let s = value.stringValue else { throw ServerError.badRequest("\(key) must be a string") }
        return s
    }

    func optionalBool(_ key: String) throws -> Bool? {
        guard let value = self[key], !value.isNull else { return nil }
        guard let b = value.boolValue else { throw ServerError.badRequest("\(key) must be true or false") }
        return b
    }

    func requiredArray(_ key: String) throws -> [JSONValue] {
        guard let value = self[key]?.arrayValue else { throw ServerError.badRequest("\(key) must be an array") }
        return value
    }

    /// `desiredKeys`: nil means every field.
    func desiredKeys() throws -> Set<String>? { try JSONValue.desiredKeys(self["desiredKeys"]) }

    /// A `desiredKeys` value (a request's or an operation's): nil means every field.
    static func desiredKeys(_ value: JSONValue?) throws -> Set<String>? {
        guard let value, !value.isNull else { return nil }
        guard let keys = value.arrayValue else { throw ServerError.badRequest("desiredKeys must be an array of strings") }
        return Set(try keys.map { guard let s = $0.stringValue else { throw ServerError.badRequest("desiredKeys must be an array of strings") }; return s })
    }
}

