import Foundation
import Logging
import NIOCore
import RecordModel
import RecordStore
import ServiceLifecycle
import Synchronization

/// How the daemon delivers webhooks; the defaults are the documented ones, the tests shorten them.
package struct WebhookDeliveryConfiguration: Sendable {
    /// Post to loopback, link-local and private addresses (`serve --allow-private-webhooks`).
    package var allowPrivateTargets = false
    /// A 2xx within this delivers.
    package var timeoutMilliseconds: Int64 = 10_000
    /// The first retry's delay; each later one doubles it (up to an hour), with jitter.
    package var retryBaseMilliseconds: Int64 = 5_000
    /// How long an event is retried before its endpoint is disabled.
    package var retryWindowMilliseconds: Int64 = 3 * 86_400_000
    /// How long a claim of events is this daemon's alone; a daemon killed mid-delivery leaves its
    /// events to others after this.
    package var leaseMilliseconds: Int64 = 60_000
    /// How often the queue is read when no local commit wakes the service (other daemons' commits,
    /// retries falling due).
    package var pollMilliseconds: Int64 = 500
    /// Events claimed from one stream at once (delivered one after another on one connection).
    package var chunk = 100
    /// Streams (endpoint and zone) delivered at once by this daemon, and by endpoint: a slow or
    /// dead endpoint holds at most `streamsPerEndpoint` of the `streams`.
    package var streams = 64
    package var streamsPerEndpoint = 8
    /// Attempts are kept this long for `webhook deliveries`.
    package var attemptRetentionMilliseconds: Int64 = 3 * 86_400_000

    package init() {}
}

/// Delivers the webhook outbox: claims the first events of each endpoint and zone (leased, so
/// daemons sharing a database never send one at once), posts them in order, one stream per task,
/// and records what happened. A failed event holds back the later events of its zone for that
/// endpoint (per-zone order) and nothing else; it is retried with back-off and jitter until the
/// retry window ends, then its endpoint is disabled.
package final class WebhookDeliveryService: Service, Sendable {
    let store: any RecordStorage
    let configuration: WebhookDeliveryConfiguration
    let counters: WebhookCounters
    let logger: Logger
    /// This daemon's name on the leases it takes.
    let owner = "daemon-" + WebhookRules.randomHex(8)
    private let wakeSignal: AsyncStream<Void>
    private let wakeContinuation: AsyncStream<Void>.Continuation
    /// Streams being delivered by this daemon now, by endpoint.
    private let active = Mutex<[String: Set<Int64>]>([:])

    package init(store: any RecordStorage, configuration: WebhookDeliveryConfiguration, counters: WebhookCounters, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.counters = counters
        self.logger = logger
        (wakeSignal, wakeContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        store.engine.setWebhookWake { [wakeContinuation] in wakeContinuation.yield() }
    }

    /// Asks the service to read the queue now.
    package func wake() { wakeContinuation.yield() }

    package func run() async throws {
        // On SQLite this daemon is the store's only one: any lease is a killed daemon's.
        if store.engine.driver.dialect.kind == .sqlite { try? await store.engine.releaseWebhookLeases() }
        await withDiscardingTaskGroup { group in
            group.addTask { await self.purgeHistoryHourly() }
            // Shutting down ends the wait below.
            group.addTask { [wakeContinuation] in
                try? await gracefulShutdown()
                wakeContinuation.finish()
            }
            var wakes = wakeSignal.makeAsyncIterator()
            var lastFailureLogged = ContinuousClock.now - .seconds(3600)
            var lastRead = ContinuousClock.now - .seconds(3600)
            // Every commit wakes the service; with no enabled endpoint when it last read, it reads at most
            // once per poll interval (a store without webhooks pays one small read per interval).
            var endpointsSeen = true
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                if !endpointsSeen { try? await Task.sleep(until: lastRead + .milliseconds(configuration.pollMilliseconds)) }
                lastRead = ContinuousClock.now
                do {
                    let (claims, endpoints) = try await claimStreams()
                    endpointsSeen = endpoints
                    for claim in claims {
                        group.addTask {
                            await self.deliver(claim)
                            self.active.withLock { _ = $0[claim.webhook.id]?.remove(claim.stream) }
                            self.wake()
                        }
                    }
                } catch {
                    // A daemon that is stopping (or never got its port) closes the store under this read: nothing to say.
                    if Task.isCancelled || Task.isShuttingDownGracefully { break }
                    // The store is unavailable (PostgreSQL restarting): the events wait, and this says so once a minute.
                    if ContinuousClock.now - lastFailureLogged > .seconds(60) {
                        logger.warning("webhook delivery cannot read its queue: \(error)")
                        lastFailureLogged = ContinuousClock.now
                    }
                }
                // The next local commit with events, a finished stream, or the poll interval.
                let poll = Task { [wakeContinuation, configuration] in
                    try? await Task.sleep(for: .milliseconds(configuration.pollMilliseconds))
                    wakeContinuation.yield()
                }
                let woke: Void? = await wakes.next()
                poll.cancel()
                if woke == nil { break }
            }
            group.cancelAll()
        }
    }

    /// Claims the streams with events due, within the concurrency limits; and whether any
    /// endpoint is registered.
    private func claimStreams() async throws -> (claims: [WebhookStreamClaim], endpointsSeen: Bool) {
        let (heads, endpointsSeen) = try await store.engine.webhookStreamHeads(limit: configuration.streams * 8)
        let chosen = active.withLock { active -> [WebhookStreamHead] in
            var chosen: [WebhookStreamHead] = []
            var total = active.values.reduce(0) { $0 + $1.count }
            var perEndpoint = active.mapValues(\.count)
            for head in heads where total < configuration.streams {
                guard active[head.webhookID]?.contains(head.stream) != true,
                    perEndpoint[head.webhookID, default: 0] < configuration.streamsPerEndpoint
                else { continue }
                chosen.append(head)
                total += 1
                perEndpoint[head.webhookID, default: 0] += 1
            }
            return chosen
        }
        guard !chosen.isEmpty else { return ([], endpointsSeen) }
        let claims = try await store.engine.claimWebhookStreams(chosen, owner: owner, leaseMilliseconds: configuration.leaseMilliseconds,
                                                                chunk: configuration.chunk)
        active.withLock { active in
            for claim in claims { active[claim.webhook.id, default: []].insert(claim.stream) }
        }
        return (claims, endpointsSeen)
    }

    /// Posts a claimed stream's events in order until one fails or the lease nears its end, then
    /// records the outcome.
    private func deliver(_ claim: WebhookStreamClaim) async {
        // Only changes the endpoint's filters pass over: its position steps over them.
        guard !claim.events.isEmpty else { return await finish(claim, WebhookStreamOutcome()) }
        var outcome = WebhookStreamOutcome()
        let webhook = claim.webhook
        let timeout = TimeAmount.milliseconds(configuration.timeoutMilliseconds)
        // Leave a whole timeout of the lease unused, so no event is still in flight when it ends.
        let stopAt = claim.leaseUntil - configuration.timeoutMilliseconds - 1000
        var next = 0
        func fail(_ event: WebhookDelivery, status: Int, error: String, started: Int64) {
            // Stopped by the daemon's shutdown, not by the receiver: the event goes again at the next start, without waiting.
            guard !Task.isCancelled else { return }
            let now = Self.milliseconds()
            outcome.attempts.append(WebhookAttempt(eventID: event.eventID, attemptedAt: started, status: status,
                                                   latencyMilliseconds: now - started, error: error))
            outcome.failed = (event.sequence, now + WebhookRules.retryDelay(afterFailures: event.attempts + 1,
                                                                        baseMilliseconds: configuration.retryBaseMilliseconds))
            counters.attemptFailed()
            logger.notice("webhook \(webhook.id) delivery of \(event.eventID) failed (attempt \(event.attempts + 1)): \(error)")
        }
        guard let key = Webhook.signingKey(webhook.secret) else {
            fail(claim.events[0], status: 0, error: "the endpoint's secret is not a whsec_ base64 key", started: Self.milliseconds())
            await finish(claim, outcome)
            return
        }
        do {
            let target = try WebhookTarget(url: webhook.url)
            while next < claim.events.count, outcome.failed == nil, Self.milliseconds() < stopAt, !Task.isCancelled {
                let connectStarted = Self.milliseconds()
                do {
                    try await WebhookConnection.open(target, allowPrivate: configuration.allowPrivateTargets, timeout: timeout) { exchange in
                        while next < claim.events.count, Self.milliseconds() < stopAt, !Task.isCancelled {
                            let event = claim.events[next]
                            let started = Self.milliseconds()
                            let timestamp = started / 1000
                            let signature = WebhookSignature.sign(id: event.eventID, timestamp: timestamp, body: event.body, key: key)
                            let response = await exchange.post(body: event.body, eventID: event.eventID, signature: signature, timestamp: timestamp)
                            if let error = response.error {
                                fail(event, status: response.status, error: error, started: started)
                                return
                            }
                            outcome.attempts.append(WebhookAttempt(eventID: event.eventID, attemptedAt: started, status: response.status,
                                                                   latencyMilliseconds: Self.milliseconds() - started, error: nil))
                            outcome.delivered.append(event.sequence)
                            next += 1
                            if !response.reusable { return }
                        }
                    }
                } catch {
                    if next < claim.events.count, outcome.failed == nil {
                        fail(claim.events[next], status: 0, error: Self.describe(error, target), started: connectStarted)
                    }
                }
            }
        } catch {
            fail(claim.events[0], status: 0, error: "\(error)", started: Self.milliseconds())
        }
        counters.eventsDelivered(outcome.delivered.count)
        // Stopped by the daemon's shutdown with nothing to record: the lease ends by itself (at
        // once on SQLite's next start).
        if Task.isCancelled && outcome.delivered.isEmpty && outcome.failed == nil { return }
        await finish(claim, outcome)
    }

    /// Records the outcome; a store that cannot take it now leaves the lease to end, and the
    /// events are delivered again (at least once).
    private func finish(_ claim: WebhookStreamClaim, _ outcome: WebhookStreamOutcome) async {
        do {
            if let reason = try await store.engine.finishWebhookStream(claim, owner: owner, outcome: outcome,
                                                                         retryWindowMilliseconds: configuration.retryWindowMilliseconds) {
                counters.endpointDisabled()
                logger.error("webhook \(claim.webhook.id) (\(claim.webhook.url)) \(reason); 'scorebookd webhook enable \(claim.webhook.id)' resumes it")
            }
        } catch {
            logger.warning("webhook \(claim.webhook.id): cannot record \(outcome.delivered.count) deliveries (they will be sent again): \(error)")
        }
    }

    private func purgeHistoryHourly() async {
        while !Task.isCancelled {
            do {
                _ = try await store.engine.purgeWebhookHistory(attemptRetentionMilliseconds: configuration.attemptRetentionMilliseconds)
            } catch {
                if Task.isCancelled { return }
                logger.warning("webhook history purge failed: \(error)")
            }
            do { try await Task.sleep(for: .seconds(3600)) } catch { return }
        }
    }

    static func milliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    static func describe(_ error: any Error, _ target: WebhookTarget) -> String {
        if let failure = error as? WebhookDeliveryError { return failure.description }
        let text = "\(error)"
        if text.contains("connectTimeout") || text.contains("ConnectTimeout") { return "cannot connect to \(target.host):\(target.port): timed out" }
        if text.contains("refused") || text.contains("ECONNREFUSED") { return "cannot connect to \(target.host):\(target.port): connection refused" }
        return "cannot connect to \(target.host):\(target.port): \(text.split(separator: "\n").first ?? "")"
    }
}
