import Crypto
import Dispatch
import Foundation
import HTTPTypes
import Logging
import RecordModel
import RecordStore
import Synchronization

/// The HTTP API (docs/api): its routes (`router(configuration:)`) decode, call one store
/// operation, and encode; all the semantics live in the store.
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

    /// Whether users may register webhooks on loopback, link-local and private addresses
    /// (`serve --allow-private-webhooks`).
    let allowsPrivateWebhooks: Bool

    /// `requestsPerSecond` (with bursts of twice that) is the per-user rate limit.
    package init(store: any RecordStorage, requestsPerSecond: Double = 2000, logger: Logger = Logger(label: "scorebookd"),
                 allowsPrivateWebhooks: Bool = false) {
        self.store = store
        self.allowsPrivateWebhooks = allowsPrivateWebhooks
        self.rateLimiter = RateLimiter(ratePerSecond: requestsPerSecond, burst: requestsPerSecond * 2)
        self.logger = logger
        let hub = PushHub(store: store)
        self.pushHub = hub
        store.setCommitObserver { hub.commitLanded($0) }
    }

    func metricsResponse() async throws -> APIResponse {
        // Without the store's figures while it cannot answer: the rest still tells what is happening.
        let statistics = try? await StoreTransactionRunner(deadline: RecordAPI.readinessDeadline).run { _ in try await self.store.statistics() }
        let storeGauges: [(String, String, Double)] = statistics.map { statistics in [
            ("scorebookd_records", "Live records in all zones.", Double(statistics.records)),
            ("scorebookd_zones", "Live zones in all databases.", Double(statistics.zones)),
            ("scorebookd_notifications_stored", "Notifications kept for delivery.", Double(statistics.notifications)),
        ] } ?? []
        let webhooks = try? await StoreTransactionRunner(deadline: RecordAPI.readinessDeadline).run { _ in try await self.store.engine.webhookGauges() }
        let webhookGauges: [(String, String, Double)] = webhooks.map { [
            ("scorebookd_webhook_endpoints", "Registered webhook endpoints.", Double($0.endpoints)),
            ("scorebookd_webhook_endpoints_disabled", "Webhook endpoints disabled (by an operator, or after failing for the whole retry window).",
             Double($0.disabled)),
            ("scorebookd_webhook_events_pending", "Webhook events not yet delivered.", Double($0.pending)),
        ] } ?? []
        let text = metrics.render(gauges: storeGauges + webhookGauges + [
            ("scorebookd_subscribers_connected", "Open event streams.", Double(metrics.connectedEventStreams)),
            ("scorebookd_waiters", "Long-polls and event streams waiting for a commit.", Double(pushHub.waiterCount)),
            ("scorebookd_store_transactions_abandoned", "Store transactions given up at the request deadline and still running.",
             Double(StoreTransactionRunner.abandonedInFlight.load(ordering: .relaxed))),
            ("scorebookd_push_last_delivery_seconds",
             "From the last commit reaching the push hub to the last delivery written after it (the server's fan-out time).",
             pushHub.lastCommitToLastDeliverySeconds),
        ], counters: [
            ("scorebookd_push_read_failures_total",
             "Reads of notifications for push the store could not answer (each database is read again after a back-off).",
             pushHub.readFailureCount),
        ])
        return APIResponse(status: 200, text: text, contentType: "text/plain; version=0.0.4")
    }

    func authenticate(_ request: RequestFacts) async throws -> User {
        if let header = request.authorization {
            // The scheme name is case-insensitive (RFC 9110, section 11.1).
            let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else {
                throw ServerError(.authenticationFailed, "Authorization must be 'Bearer TOKEN'")
            }
            // Optional whitespace is spaces and tabs (RFC 9110, section 5.6.3); Foundation's
            // trimming cost a request more than looking the token up.
            var token = parts[1]
            while token.first == " " || token.first == "\t" { token.removeFirst() }
            while token.last == " " || token.last == "\t" { token.removeLast() }
            guard let user = try await self.store.authenticate(bearerToken: String(token)) else {
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

    /// The body of a request to `operation`, read as the operation declares.
    func readBody(_ method: HTTPRequest.Method, _ bytes: [UInt8], operation: String, as body: DatabaseOperation.Body) throws -> JSONValue {
        let acceptsGet: Bool
        switch body {
        case .unread: return [:]
        case .json(let getToo): acceptsGet = getToo
        case .recordDrafts: acceptsGet = false
        }
        switch method {
        case .get:
            guard acceptsGet else { throw ServerError.badRequest("\(operation) needs POST") }
            return [:]
        case .post:
            // Record drafts are read by their operation, straight from the bytes (`ModifyRequestBody`).
            if body == .recordDrafts || JSONValue.isBlank(bytes) { return [:] }
            let json = try JSONValue.parse(bytes)
            guard case .object = json else { throw ServerError.badRequest("the request body must be a JSON object") }
            return json
        default:
            throw ServerError.badRequest("use GET or POST")
        }
    }

    /// An operation that answers with records: its records carry a download URL for each asset,
    /// made for this caller, and their numbers are strings when the request asks.
    func perform(_ operation: DatabaseOperation, _ call: OperationCall) async throws -> JSONValue {
        let answer = try await withAssetLinks(call.scope, request: call.facts) { try await operation.handler(self, call) }
        let asksNumbersAsStrings = RecordAPI.asksNumbersAsStrings(call.body, bodyBytes: call.bodyBytes, readsRecordDrafts: operation.body == .recordDrafts)
        return asksNumbersAsStrings ? try RecordAPI.numbersAsStrings(answer) : answer
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

