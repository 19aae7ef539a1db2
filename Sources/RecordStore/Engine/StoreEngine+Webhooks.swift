import RecordModel

/// Webhooks: their events written in the change's own transaction (a committed change always has
/// its events, a rolled-back one never), their administration, and the delivery queue the daemons
/// lease events from.
extension StoreEngine {
    // MARK: The outbox

    /// Writes one event per change (and one `zone.deleted` when `zoneDeleted`) for every endpoint
    /// that selects it, in the caller's transaction. `scope` is the zone owner's database. Returns
    /// whether it wrote any (the delivery service is woken after the commit).
    func recordWebhookEvents(_ changes: [CommittedChange], zone: ZoneRow, scope: DatabaseScope, zoneDeleted: Bool,
                             _ connection: any StoreConnection) async throws -> Bool
    {
        guard !changes.isEmpty || zoneDeleted else { return false }
        let endpoints = try await connection.rows("SELECT \(Self.webhookColumns) FROM webhooks WHERE container IS NULL OR container = ?",
                                                  [.text(scope.container)]).map(Self.webhook)
        guard !endpoints.isEmpty else { return false }
        var zoneIsShared = false
        if endpoints.contains(where: { $0.database == .shared }) {
            zoneIsShared = try await connection.scalarInt("SELECT 1 FROM shares WHERE zone_id = ?", [.int(zone.id)]) != nil
        }
        var events: [(WebhookRules.Event, WebhookEventKind)] = changes.map { change in
            let deleted = change.kind == .deleted
            let tag = deleted ? RecordRules.changeTag(zoneRowID: zone.id, sequence: change.sequence) : change.record.changeTag
            return (WebhookRules.Event(type: deleted ? "record.deleted" : "record.changed", recordName: change.recordName,
                                       recordType: change.recordType, changeTag: tag, sequence: change.sequence,
                                       fieldsJSON: deleted ? nil : change.record.fieldsJSON), deleted ? .deleted : .changed)
        }
        if zoneDeleted {
            events.append((WebhookRules.Event(type: "zone.deleted", sequence: zone.seq), .deleted))
        }
        let now = clock()
        let dialect = connection.dialect
        let shared = WebhookRules.sharedMembers(timestamp: now, scope: scope, zone: zone.name)
        var rows: [[SQLValue]] = []
        rows.reserveCapacity(events.count * endpoints.count)
        for (event, kind) in events {
            let id = WebhookRules.newEventID()
            let token = FeedRules.zoneToken(storeID: storeID, zone: ZoneRow(id: zone.id, name: zone.name, seq: event.sequence, purgedSeq: 0))
            // Endpoints asking for the same fields get the same bytes, made once.
            var bodies: [(WebhookFields, SQLValue)] = []
            for endpoint in endpoints
            where endpoint.selects(kind, recordType: event.recordType, zone: zone.name, scope: scope, zoneIsShared: zoneIsShared) {
                let body: SQLValue
                if let made = bodies.first(where: { $0.0 == endpoint.fields }) {
                    body = made.1
                } else {
                    body = dialect.jsonValue(WebhookRules.body(event, id: id, shared: shared, syncToken: token, fields: endpoint.fields))
                    bodies.append((endpoint.fields, body))
                }
                rows.append([.text(endpoint.id), .text(id), .int(zone.id), .int(event.sequence), .int(now), body])
            }
        }
        guard !rows.isEmpty else { return false }
        try await connection.insertRows(into: "webhook_events", columns: [
            StoreColumn("webhook_id", .text), StoreColumn("event_id", .text), StoreColumn("stream", .integer),
            StoreColumn("zone_seq", .integer), StoreColumn("created_at", .integer), StoreColumn("payload", dialect.payloadType),
        ], rows: rows)
        return true
    }

    // MARK: Administration

    static let webhookColumns = "id, url, secret, owner_user_id, container, environment, database_kind, zone, record_type, events, fields, "
        + "enabled, disabled_reason, created_at"

    static func webhook(_ row: StoreRow) -> Webhook {
        Webhook(id: row.text(0), url: row.text(1), secret: row.text(2), ownerUserID: row.optionalInt(3), container: row.optionalText(4),
                environment: row.optionalText(5).flatMap(Environment.init(rawValue:)), database: row.optionalText(6).flatMap(DatabaseKind.init(rawValue:)),
                zone: row.optionalText(7), recordType: row.optionalText(8),
                events: (try? WebhookEventKind.parse(row.text(9))) ?? [.changed, .deleted], fields: (try? WebhookFields.parse(row.text(10))) ?? .all,
                enabled: row.int(11) != 0, disabledReason: row.optionalText(12), createdAt: row.int(13))
    }

    /// Registers the endpoint (its id and secret as given) and returns it as stored.
    package func addWebhook(_ webhook: Webhook) async throws -> Webhook {
        var stored = webhook
        stored.createdAt = clock()
        let row: [SQLValue] = [
            .text(stored.id), .text(stored.url), .text(stored.secret), stored.ownerUserID.map { .int($0) } ?? .null,
            stored.container.map { .text($0) } ?? .null, stored.environment.map { .text($0.rawValue) } ?? .null,
            stored.database.map { .text($0.rawValue) } ?? .null, stored.zone.map { .text($0) } ?? .null,
            stored.recordType.map { .text($0) } ?? .null,
            .text(WebhookEventKind.allCases.filter(stored.events.contains).map(\.rawValue).joined(separator: ",")), .text(stored.fields.text),
            .int(stored.enabled ? 1 : 0), .int(stored.createdAt),
        ]
        _ = try await driver.write { connection in
            try await connection.execute(
                """
                INSERT INTO webhooks (id, url, secret, owner_user_id, container, environment, database_kind, zone, record_type, events, fields,
                    enabled, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, row)
        }
        return stored
    }

    /// Every endpoint (`ownerUserID` nil), or one user's, oldest first.
    package func webhooks(ownerUserID: Int64? = nil) async throws -> [Webhook] {
        try await driver.read { connection in
            if let ownerUserID {
                return try await connection.rows("SELECT \(Self.webhookColumns) FROM webhooks WHERE owner_user_id = ? ORDER BY created_at, id",
                                                 [.int(ownerUserID)]).map(Self.webhook)
            }
            return try await connection.rows("SELECT \(Self.webhookColumns) FROM webhooks ORDER BY created_at, id").map(Self.webhook)
        }
    }

    /// How many events each endpoint still has to deliver.
    package func pendingWebhookEvents() async throws -> [String: Int] {
        try await driver.read { connection in
            var counts: [String: Int] = [:]
            for row in try await connection.rows("SELECT webhook_id, COUNT(*) FROM webhook_events WHERE delivered_at IS NULL GROUP BY webhook_id") {
                counts[row.text(0)] = Int(row.int(1))
            }
            return counts
        }
    }

    /// Removes the endpoint with its queue and history; `ownerUserID` set: only if it is that user's.
    /// Throws `NOT_FOUND` when there is no such endpoint.
    package func removeWebhook(id: String, ownerUserID: Int64? = nil) async throws {
        try await driver.write { connection in
            let owner = ownerUserID.map { " AND owner_user_id = \($0)" } ?? ""
            guard try await connection.execute("DELETE FROM webhooks WHERE id = ?" + owner, [.text(id)]) > 0 else {
                throw Self.unknownWebhook(id)
            }
            try await connection.execute("DELETE FROM webhook_events WHERE webhook_id = ?", [.text(id)])
            try await connection.execute("DELETE FROM webhook_attempts WHERE webhook_id = ?", [.text(id)])
        }
    }

    static func unknownWebhook(_ id: String) -> ServerError { ServerError(.notFound, "no webhook '\(id)'") }

    /// Enables or disables the endpoint. Its events keep queueing while it is disabled; enabling it
    /// delivers them, the first at once.
    package func setWebhookEnabled(id: String, _ enabled: Bool, reason: String? = nil) async throws {
        try await driver.write { connection in
            guard try await connection.execute("UPDATE webhooks SET enabled = ?, disabled_reason = ? WHERE id = ?",
                                               [.int(enabled ? 1 : 0), enabled ? .null : reason.map { .text($0) } ?? .null, .text(id)]) > 0
            else { throw Self.unknownWebhook(id) }
            if enabled {
                try await connection.execute(
                    "UPDATE webhook_events SET attempts = 0, next_attempt_at = 0, first_failed_at = NULL WHERE webhook_id = ? AND delivered_at IS NULL",
                    [.text(id)])
            }
        }
    }

    /// The endpoint's most recent attempts, newest first (`failedOnly`: those that did not deliver).
    package func webhookAttempts(id: String, failedOnly: Bool, limit: Int) async throws -> [WebhookAttempt] {
        try await driver.read { connection in
            guard try await connection.scalarInt("SELECT 1 FROM webhooks WHERE id = ?", [.text(id)]) != nil else { throw Self.unknownWebhook(id) }
            let failed = failedOnly ? " AND (status < 200 OR status > 299 OR error IS NOT NULL)" : ""
            return try await connection.rows(
                "SELECT event_id, attempted_at, status, latency_ms, error FROM webhook_attempts WHERE webhook_id = ?\(failed) ORDER BY id DESC LIMIT ?",
                [.text(id), .int(Int64(limit))]
            ).map { WebhookAttempt(eventID: $0.text(0), attemptedAt: $0.int(1), status: Int($0.int(2)), latencyMilliseconds: $0.int(3),
                                   error: $0.optionalText(4)) }
        }
    }

    /// Queues again, with their ids, the endpoint's kept events from `start` on; returns how many.
    /// They are delivered before any later event of their zone, so each zone's order holds.
    package func replayWebhook(id: String, from start: WebhookReplayStart) async throws -> Int {
        let condition: String
        let arguments: [SQLValue]
        switch start {
        case .timestamp(let milliseconds):
            (condition, arguments) = ("created_at >= ?", [.int(milliseconds)])
        case .syncToken(let text):
            let token = try SyncToken(decoding: text, expectedKind: .zone)
            guard token.storeID == storeID else { throw ServerError.badRequest("the sync token belongs to another store") }
            (condition, arguments) = ("stream = ? AND zone_seq > ?", [.int(token.ownerID), .int(token.sequence)])
        }
        return try await driver.write { connection in
            guard try await connection.scalarInt("SELECT 1 FROM webhooks WHERE id = ?", [.text(id)]) != nil else { throw Self.unknownWebhook(id) }
            return try await connection.execute(
                """
                UPDATE webhook_events SET delivered_at = NULL, attempts = 0, next_attempt_at = 0, first_failed_at = NULL
                WHERE webhook_id = ? AND \(condition)
                """, [.text(id)] + arguments)
        }
    }

    // MARK: Delivery

    /// The first undelivered event of each endpoint and zone whose endpoint is enabled, at most
    /// `limit`: one read, which never waits for a writer.
    package func webhookStreamHeads(limit: Int) async throws -> [WebhookStreamHead] {
        try await driver.readStatement { connection in
            try await connection.rows(
                """
                SELECT e.webhook_id, e.stream, MIN(e.id) FROM webhook_events e JOIN webhooks w ON w.id = e.webhook_id
                WHERE e.delivered_at IS NULL AND w.enabled = 1 GROUP BY e.webhook_id, e.stream ORDER BY MIN(e.id) LIMIT ?
                """, [.int(Int64(limit))]
            ).map { WebhookStreamHead(webhookID: $0.text(0), stream: $0.int(1), rowID: $0.int(2)) }
        }
    }

    /// Leases to `owner`, until `now + leaseMilliseconds`, up to `chunk` events of each stream
    /// whose first event is still `head`, due and leased to no one. Rows another daemon is
    /// leasing are skipped (`FOR UPDATE SKIP LOCKED` on PostgreSQL), so two daemons never
    /// deliver one stream at once and a later event never goes before an earlier one.
    package func claimWebhookStreams(_ heads: [WebhookStreamHead], owner: String, leaseMilliseconds: Int64, chunk: Int) async throws
        -> [WebhookStreamClaim]
    {
        guard !heads.isEmpty else { return [] }
        let now = clock()
        let leaseUntil = now + leaseMilliseconds
        return try await driver.write { connection in
            let skipLocked = connection.dialect.kind == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
            let enabled = try await connection.rows("SELECT \(Self.webhookColumns) FROM webhooks WHERE enabled = 1").map(Self.webhook)
            let endpoints = Dictionary(enabled.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            var claims: [WebhookStreamClaim] = []
            for head in heads {
                guard let webhook = endpoints[head.webhookID] else { continue }
                let rows = try await connection.rows(
                    """
                    SELECT id, event_id, payload, attempts, first_failed_at, next_attempt_at, lease_until FROM webhook_events
                    WHERE webhook_id = ? AND stream = ? AND delivered_at IS NULL ORDER BY id LIMIT ?\(skipLocked)
                    """, [.text(head.webhookID), .int(head.stream), .int(Int64(chunk))])
                // The head moved (delivered meanwhile), is leased, or is waiting for its retry.
                guard let first = rows.first, first.int(0) == head.rowID, first.int(5) <= now, first.int(6) <= now else { continue }
                var events: [WebhookDelivery] = []
                for row in rows {
                    if row.int(6) > now { break }  // leased by another daemon: what follows is not ours either
                    events.append(WebhookDelivery(rowID: row.int(0), eventID: row.text(1), body: row.blob(2), attempts: Int(row.int(3)),
                                                  firstFailedAt: row.optionalInt(4)))
                }
                try await connection.execute(
                    "UPDATE webhook_events SET lease_owner = ?, lease_until = ? WHERE " + Self.rowIDIsIn(connection.dialect),
                    [.text(owner), .int(leaseUntil), .text(Self.rowIDList(events.map(\.rowID)))])
                claims.append(WebhookStreamClaim(webhook: webhook, stream: head.stream, events: events, leaseUntil: leaseUntil))
            }
            return claims
        }
    }

    /// Ends a claim: marks the delivered rows, schedules the failed one's retry (or disables the
    /// endpoint, returning why, once it has failed for `retryWindowMilliseconds`), gives the rest of
    /// the lease back, and keeps the attempts.
    package func finishWebhookStream(_ claim: WebhookStreamClaim, owner: String, outcome: WebhookStreamOutcome,
                                     retryWindowMilliseconds: Int64) async throws -> String?
    {
        let now = clock()
        let leased = Self.rowIDList(claim.events.map(\.rowID))
        return try await driver.write { connection in
            let dialect = connection.dialect
            if !outcome.delivered.isEmpty {
                try await connection.execute(
                    "UPDATE webhook_events SET delivered_at = ?, lease_owner = NULL, lease_until = 0 WHERE lease_owner = ? AND "
                        + Self.rowIDIsIn(dialect), [.int(now), .text(owner), .text(Self.rowIDList(outcome.delivered))])
            }
            var disabledReason: String?
            if let failed = outcome.failed, let event = claim.events.first(where: { $0.rowID == failed.rowID }) {
                let firstFailedAt = event.firstFailedAt ?? now
                try await connection.execute(
                    "UPDATE webhook_events SET attempts = attempts + 1, next_attempt_at = ?, first_failed_at = ? WHERE id = ? AND lease_owner = ?",
                    [.int(failed.retryAt), .int(firstFailedAt), .int(failed.rowID), .text(owner)])
                if now - firstFailedAt >= retryWindowMilliseconds {
                    let hours = retryWindowMilliseconds / 3_600_000
                    let reason = "disabled after \(hours > 0 ? "\(hours) hours" : "\(retryWindowMilliseconds / 1000) seconds") of failed deliveries"
                        + (outcome.attempts.last?.error.map { " (last: \($0))" } ?? outcome.attempts.last.map { " (last: HTTP \($0.status))" } ?? "")
                    try await connection.execute("UPDATE webhooks SET enabled = 0, disabled_reason = ? WHERE id = ? AND enabled = 1",
                                                 [.text(reason), .text(claim.webhook.id)])
                    disabledReason = reason
                }
            }
            try await connection.execute(
                "UPDATE webhook_events SET lease_owner = NULL, lease_until = 0 WHERE lease_owner = ? AND delivered_at IS NULL AND "
                    + Self.rowIDIsIn(dialect), [.text(owner), .text(leased)])
            if !outcome.attempts.isEmpty {
                try await connection.insertRows(into: "webhook_attempts", columns: [
                    StoreColumn("webhook_id", .text), StoreColumn("event_id", .text), StoreColumn("attempted_at", .integer),
                    StoreColumn("status", .integer), StoreColumn("latency_ms", .integer), StoreColumn("error", .text),
                ], rows: outcome.attempts.map {
                    [.text(claim.webhook.id), .text($0.eventID), .int($0.attemptedAt), .int(Int64($0.status)), .int($0.latencyMilliseconds),
                     $0.error.map { .text($0) } ?? .null]
                })
            }
            return disabledReason
        }
    }

    /// `id` is one of the integers of a JSON array bound to one `?` (`rowIDList`): the primary key probed once per id.
    static func rowIDIsIn(_ dialect: SQLDialect) -> String {
        switch dialect.kind {
        case .sqlite: return "id IN (SELECT value FROM json_each(?))"
        case .postgres: return "id = ANY(ARRAY(SELECT jsonb_array_elements_text(?::jsonb)::bigint))"
        }
    }

    static func rowIDList(_ ids: [Int64]) -> String { "[" + ids.map(String.init).joined(separator: ",") + "]" }

    /// Frees every lease (a daemon starting on a store no other daemon serves: SQLite's, whose
    /// leases can only be those of a daemon that was killed).
    package func releaseWebhookLeases() async throws {
        _ = try await driver.write { connection in
            try await connection.execute("UPDATE webhook_events SET lease_owner = NULL, lease_until = 0 WHERE lease_until > 0")
        }
    }

    /// Removes events older than `eventRetention` that were delivered (the window `webhook replay`
    /// reaches) or wait for a disabled endpoint (its queue is bounded so), and attempts older than
    /// `attemptRetention`; returns how many events went.
    package func purgeWebhookHistory(eventRetentionMilliseconds: Int64, attemptRetentionMilliseconds: Int64) async throws -> Int {
        let now = clock()
        return try await driver.write { connection in
            let events = try await connection.execute(
                """
                DELETE FROM webhook_events WHERE created_at < ?
                AND (delivered_at IS NOT NULL OR webhook_id IN (SELECT id FROM webhooks WHERE enabled = 0))
                """, [.int(now - eventRetentionMilliseconds)])
            try await connection.execute("DELETE FROM webhook_attempts WHERE attempted_at < ?", [.int(now - attemptRetentionMilliseconds)])
            return events
        }
    }

    /// How many endpoints are disabled, and how many events wait in total (for `/metrics`).
    package func webhookGauges() async throws -> (endpoints: Int, disabled: Int, pending: Int) {
        try await driver.readStatement { connection in
            let row = try await connection.first(
                """
                SELECT (SELECT COUNT(*) FROM webhooks), (SELECT COUNT(*) FROM webhooks WHERE enabled = 0),
                    (SELECT COUNT(*) FROM webhook_events WHERE delivered_at IS NULL)
                """)
            return (Int(row?.int(0) ?? 0), Int(row?.int(1) ?? 0), Int(row?.int(2) ?? 0))
        }
    }
}
