import RecordModel

/// Webhooks. Their events are the zones' own change history: a record's row carries the
/// sequence of its latest change (a tombstone, its deletion), so an endpoint's position in a zone
/// (`webhook_streams.delivered_seq`) is all its queue needs, and a change costs the webhooks
/// nothing to write. Only what the records table no longer holds is kept apart, in the change's
/// own transaction, and only while an enabled endpoint still lacks it (`webhook_backlog`): a state
/// a later change replaced, and a deleted zone's last changes with its `zone.deleted`.
extension StoreEngine {
    // MARK: What the records table cannot say later

    /// Keeps, in the batch's transaction, the replaced states that an enabled endpoint has not had
    /// yet. One indexed read, and only for batches that replace something in a zone some endpoint
    /// follows.
    func keepUndeliveredVersions(_ superseded: [SupersededVersion], zone: ZoneRow, _ connection: any StoreConnection) async throws {
        guard !superseded.isEmpty, let lowest = try await lowestWebhookPosition(zoneRowID: zone.id, connection) else { return }
        let dialect = connection.dialect
        let rows: [[SQLValue]] = superseded.filter { $0.sequence > lowest }.map { version in
            let state = version.state
            return [.int(zone.id), .int(version.sequence), .int(state.deleted ? WebhookBacklogKind.deleted : WebhookBacklogKind.changed),
                    .text(version.recordName), .text(state.type), .text(state.tag),
                    state.deleted ? .null : dialect.jsonValue(state.fieldsJSON), .int(state.modified.timestamp)]
        }
        guard !rows.isEmpty else { return }
        try await connection.insertRows(into: "webhook_backlog", columns: Self.backlogColumns(dialect), rows: rows,
                                        suffix: "ON CONFLICT DO NOTHING")
    }

    /// Keeps, before a zone's rows are deleted, its changes an enabled endpoint has not had yet and
    /// one `zone.deleted` after them.
    func keepDeletedZoneForWebhooks(_ zone: ZoneRow, at now: Int64, _ connection: any StoreConnection) async throws {
        guard let lowest = try await lowestWebhookPosition(zoneRowID: zone.id, connection) else { return }
        let shared = try await connection.scalarInt("SELECT 1 FROM shares WHERE zone_id = ?", [.int(zone.id)]) != nil
        try await connection.execute(
            """
            INSERT INTO webhook_backlog (zone_id, seq, kind, record_name, record_type, tag, fields, created_at, zone_shared)
            SELECT zone_id, seq, deleted, name, type, tag, CASE WHEN deleted = 1 THEN NULL ELSE fields END, modified_at, \(shared ? 1 : 0)
            FROM records WHERE zone_id = ? AND seq > ? ON CONFLICT DO NOTHING
            """, [.int(zone.id), .int(lowest)])
        try await connection.execute(
            "INSERT INTO webhook_backlog (zone_id, seq, kind, created_at, zone_shared) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [.int(zone.id), .int(zone.seq + 1), .int(WebhookBacklogKind.zoneDeleted), .int(now), .int(shared ? 1 : 0)])
    }

    /// The position of the enabled endpoint furthest behind in the zone; nil when none follows it.
    private func lowestWebhookPosition(zoneRowID: Int64, _ connection: any StoreConnection) async throws -> Int64? {
        try await connection.scalarInt(
            "SELECT MIN(s.delivered_seq) FROM webhook_streams s JOIN webhooks w ON w.id = s.webhook_id WHERE s.zone_id = ? AND w.enabled = 1",
            [.int(zoneRowID)])
    }

    /// Starts every endpoint at the beginning of a new zone, in the transaction that creates it.
    func startWebhookStreams(zoneRowID: Int64, _ connection: any StoreConnection) async throws {
        try await connection.execute("INSERT INTO webhook_streams (webhook_id, zone_id, delivered_seq) SELECT id, ?, 0 FROM webhooks",
                                     [.int(zoneRowID)])
    }

    static func backlogColumns(_ dialect: any SQLDialect) -> [StoreColumn] {
        [StoreColumn("zone_id", .integer), StoreColumn("seq", .integer), StoreColumn("kind", .integer), StoreColumn("record_name", .text),
         StoreColumn("record_type", .text), StoreColumn("tag", .text), StoreColumn("fields", dialect.fieldsType),
         StoreColumn("created_at", .integer)]
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

    /// Registers the endpoint (its id and secret as given) and returns it as stored. It hears of
    /// the changes committed after it, in every zone.
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
        let id = stored.id
        _ = try await driver.write { connection in
            try await connection.execute(
                """
                INSERT INTO webhooks (id, url, secret, owner_user_id, container, environment, database_kind, zone, record_type, events, fields,
                    enabled, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, row)
            // Zones of every database: one that is not selected now may be later (a zone becoming shared).
            try await connection.execute(
                "INSERT INTO webhook_streams (webhook_id, zone_id, delivered_seq) SELECT ?, id, seq FROM zones WHERE deleted = 0",
                [.text(id)])
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

    /// The changes after each stream's position, of every zone (those an endpoint's filters pass
    /// over are counted until the delivery service steps over them).
    static let pendingCounts = """
        SELECT s.webhook_id, COUNT(*) FROM webhook_streams s JOIN records r ON r.zone_id = s.zone_id AND r.seq > s.delivered_seq GROUP BY s.webhook_id
        UNION ALL
        SELECT s.webhook_id, COUNT(*) FROM webhook_streams s JOIN webhook_backlog b ON b.zone_id = s.zone_id AND b.seq > s.delivered_seq
        GROUP BY s.webhook_id
        """

    /// How many events each endpoint still has to deliver.
    package func pendingWebhookEvents() async throws -> [String: Int] {
        try await driver.read { connection in
            var counts: [String: Int] = [:]
            for row in try await connection.rows(Self.pendingCounts) { counts[row.text(0), default: 0] += Int(row.int(1)) }
            return counts
        }
    }

    /// Removes the endpoint with its positions and history; `ownerUserID` set: only if it is that
    /// user's. Throws `NOT_FOUND` when there is no such endpoint.
    package func removeWebhook(id: String, ownerUserID: Int64? = nil) async throws {
        try await driver.write { connection in
            let owner = ownerUserID.map { " AND owner_user_id = \($0)" } ?? ""
            guard try await connection.execute("DELETE FROM webhooks WHERE id = ?" + owner, [.text(id)]) > 0 else {
                throw Self.unknownWebhook(id)
            }
            try await connection.execute("DELETE FROM webhook_streams WHERE webhook_id = ?", [.text(id)])
            try await connection.execute("DELETE FROM webhook_attempts WHERE webhook_id = ?", [.text(id)])
        }
    }

    static func unknownWebhook(_ id: String) -> ServerError { ServerError(.notFound, "no webhook '\(id)'") }

    /// Enables or disables the endpoint. A disabled endpoint keeps its positions; enabled again,
    /// it goes on from them, at once (a state replaced while it was disabled is not kept for it:
    /// it hears of the record as it is now).
    package func setWebhookEnabled(id: String, _ enabled: Bool, reason: String? = nil) async throws {
        try await driver.write { connection in
            guard try await connection.execute("UPDATE webhooks SET enabled = ?, disabled_reason = ? WHERE id = ?",
                                               [.int(enabled ? 1 : 0), enabled ? .null : reason.map { .text($0) } ?? .null, .text(id)]) > 0
            else { throw Self.unknownWebhook(id) }
            if enabled {
                try await connection.execute(
                    "UPDATE webhook_streams SET attempts = 0, next_attempt_at = 0, first_failed_at = NULL WHERE webhook_id = ?", [.text(id)])
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

    /// Moves the endpoint's positions back so the zones' changes from `start` on are delivered
    /// again, with their ids and in order (each record as it is now, plus what the backlog still
    /// keeps); returns how many events that makes pending.
    package func replayWebhook(id: String, from start: WebhookReplayStart) async throws -> Int {
        let reset = "attempts = 0, next_attempt_at = 0, first_failed_at = NULL"
        return try await driver.write { connection in
            guard try await connection.scalarInt("SELECT 1 FROM webhooks WHERE id = ?", [.text(id)]) != nil else { throw Self.unknownWebhook(id) }
            switch start {
            case .timestamp(let milliseconds):
                try await connection.execute(
                    """
                    UPDATE webhook_streams SET delivered_seq = (SELECT MIN(r.seq) - 1 FROM records r
                        WHERE r.zone_id = webhook_streams.zone_id AND r.modified_at >= ?), \(reset)
                    WHERE webhook_id = ? AND delivered_seq >= (SELECT MIN(r.seq) FROM records r
                        WHERE r.zone_id = webhook_streams.zone_id AND r.modified_at >= ?)
                    """, [.int(milliseconds), .text(id), .int(milliseconds)])
            case .syncToken(let text):
                let token = try SyncToken(decoding: text, expectedKind: .zone)
                guard token.storeID == self.storeID else { throw ServerError.badRequest("the sync token belongs to another store") }
                try await connection.execute("UPDATE webhook_streams SET delivered_seq = ?, \(reset) WHERE webhook_id = ? AND zone_id = ?",
                                             [.int(token.sequence), .text(id), .int(token.ownerID)])
            }
            // The replayed endpoint's count alone, not every endpoint's.
            let count = try await connection.scalarInt(
                """
                SELECT (SELECT COUNT(*) FROM webhook_streams s JOIN records r ON r.zone_id = s.zone_id AND r.seq > s.delivered_seq
                    WHERE s.webhook_id = ?)
                    + (SELECT COUNT(*) FROM webhook_streams s JOIN webhook_backlog b ON b.zone_id = s.zone_id AND b.seq > s.delivered_seq
                    WHERE s.webhook_id = ?)
                """, [.text(id), .text(id)])
            return Int(count ?? 0)
        }
    }

    // MARK: Delivery

    /// The streams (endpoint and zone) with changes after their position, due and leased to no
    /// one, of enabled endpoints, at most `limit`, and whether any endpoint is enabled: reads that
    /// never wait for a writer.
    package func webhookStreamHeads(limit: Int) async throws -> (heads: [WebhookStreamHead], endpointsEnabled: Bool) {
        let now = clock()
        return try await driver.readStatement { connection in
            guard try await connection.scalarInt("SELECT 1 FROM webhooks WHERE enabled = 1 LIMIT 1") != nil else { return ([], false) }
            let heads = try await connection.rows(
                """
                SELECT s.webhook_id, s.zone_id, s.delivered_seq FROM webhook_streams s JOIN webhooks w ON w.id = s.webhook_id
                JOIN zones z ON z.id = s.zone_id
                WHERE w.enabled = 1 AND s.next_attempt_at <= ? AND s.lease_until <= ?
                AND (z.seq > s.delivered_seq OR EXISTS (SELECT 1 FROM webhook_backlog b WHERE b.zone_id = s.zone_id AND b.seq > s.delivered_seq))
                ORDER BY s.next_attempt_at, s.zone_id LIMIT ?
                """, [.int(now), .int(now), .int(Int64(limit))]
            ).map { WebhookStreamHead(webhookID: $0.text(0), stream: $0.int(1), position: $0.int(2)) }
            return (heads, true)
        }
    }

    /// Claims each stream still at the position its head read, due and leased to no one, with its
    /// next `chunk` events the endpoint selects (none: only the changes its filters pass over,
    /// which its `finish` steps over). On PostgreSQL, where several daemons share the streams, a
    /// claim is a lease to `owner` until `now + leaseMilliseconds`, taken in a write transaction
    /// that skips a stream another daemon is claiming (`FOR UPDATE SKIP LOCKED`), so two daemons
    /// never deliver one stream at once and a later event never goes before an earlier one. On
    /// SQLite one daemon serves the store and never claims a stream it is delivering, so a claim is
    /// a read: no write, and no wait for the writer, between a commit and its delivery.
    package func claimWebhookStreams(_ heads: [WebhookStreamHead], owner: String, leaseMilliseconds: Int64, chunk: Int) async throws
        -> [WebhookStreamClaim]
    {
        guard !heads.isEmpty else { return [] }
        let now = clock()
        let leaseUntil = now + leaseMilliseconds
        let claim: @Sendable (any StoreConnection) async throws -> [WebhookStreamClaim] = { connection in
            let leases = connection.dialect.kind == .postgres
            let enabled = try await connection.rows("SELECT \(Self.webhookColumns) FROM webhooks WHERE enabled = 1").map(Self.webhook)
            let endpoints = Dictionary(enabled.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            var claims: [WebhookStreamClaim] = []
            for head in heads {
                guard let webhook = endpoints[head.webhookID],
                    let stream = try await connection.first(
                        """
                        SELECT delivered_seq, attempts, first_failed_at, next_attempt_at, lease_until FROM webhook_streams
                        WHERE webhook_id = ? AND zone_id = ?\(leases ? " FOR UPDATE SKIP LOCKED" : "")
                        """, [.text(head.webhookID), .int(head.stream)]),
                    stream.int(0) == head.position, stream.int(3) <= now, stream.int(4) <= now,
                    let zone = try await self.webhookZone(head.stream, connection)
                else { continue }
                var window = try await self.webhookEvents(for: webhook, zone: zone, after: head.position, chunk: chunk, connection)
                guard !window.events.isEmpty || window.through > head.position else { continue }
                if !window.events.isEmpty {
                    window.events[0].attempts = Int(stream.int(1))
                    window.events[0].firstFailedAt = stream.optionalInt(2)
                }
                if leases {
                    try await connection.execute("UPDATE webhook_streams SET lease_owner = ?, lease_until = ? WHERE webhook_id = ? AND zone_id = ?",
                                                 [.text(owner), .int(leaseUntil), .text(head.webhookID), .int(head.stream)])
                }
                claims.append(WebhookStreamClaim(webhook: webhook, stream: head.stream, events: window.events, through: window.through,
                                                 leaseUntil: leaseUntil))
            }
            return claims
        }
        return driver.dialect.kind == .postgres ? try await driver.write(claim) : try await driver.read(claim)
    }

    /// Ends a claim: moves the stream's position past what was delivered (and what the filters
    /// passed over), schedules the failed event's retry (or disables the endpoint, returning why,
    /// once its zone has failed for `retryWindowMilliseconds`), gives the lease back, drops the
    /// zone's backlog every enabled endpoint has had, and keeps the attempts.
    package func finishWebhookStream(_ claim: WebhookStreamClaim, owner: String, outcome: WebhookStreamOutcome,
                                     retryWindowMilliseconds: Int64) async throws -> String?
    {
        let now = clock()
        let delivered = Set(outcome.delivered)
        // Everything before the first event not delivered was delivered or not selected.
        let position = claim.events.first { !delivered.contains($0.sequence) }.map { $0.sequence - 1 } ?? claim.through
        let key: [SQLValue] = [.text(claim.webhook.id), .int(claim.stream)]
        return try await driver.write { connection in
            // A lease is PostgreSQL's (see `claimWebhookStreams`): only its holder moves the stream.
            let leaseHeld = connection.dialect.kind == .postgres ? " AND lease_owner = ?" : ""
            let holder: [SQLValue] = connection.dialect.kind == .postgres ? [.text(owner)] : []
            var disabledReason: String?
            if let failed = outcome.failed, let event = claim.events.first(where: { $0.sequence == failed.sequence }) {
                // A failure after deliveries is a new event's first.
                let firstFailedAt = (outcome.delivered.isEmpty ? event.firstFailedAt : nil) ?? now
                let attempts = (outcome.delivered.isEmpty ? event.attempts : 0) + 1
                try await connection.execute(
                    """
                    UPDATE webhook_streams SET delivered_seq = ?, attempts = ?, next_attempt_at = ?, first_failed_at = ?, lease_owner = NULL,
                        lease_until = 0 WHERE webhook_id = ? AND zone_id = ?\(leaseHeld)
                    """, [.int(position), .int(Int64(attempts)), .int(failed.retryAt), .int(firstFailedAt)] + key + holder)
                if now - firstFailedAt >= retryWindowMilliseconds {
                    let hours = retryWindowMilliseconds / 3_600_000
                    let reason = "disabled after \(hours > 0 ? "\(hours) hours" : "\(retryWindowMilliseconds / 1000) seconds") of failed deliveries"
                        + (outcome.attempts.last?.error.map { " (last: \($0))" } ?? outcome.attempts.last.map { " (last: HTTP \($0.status))" } ?? "")
                    try await connection.execute("UPDATE webhooks SET enabled = 0, disabled_reason = ? WHERE id = ? AND enabled = 1",
                                                 [.text(reason), .text(claim.webhook.id)])
                    disabledReason = reason
                }
            } else {
                let reset = outcome.delivered.isEmpty ? "" : ", attempts = 0, next_attempt_at = 0, first_failed_at = NULL"
                try await connection.execute(
                    """
                    UPDATE webhook_streams SET delivered_seq = ?, lease_owner = NULL, lease_until = 0\(reset)
                    WHERE webhook_id = ? AND zone_id = ?\(leaseHeld)
                    """, [.int(position)] + key + holder)
            }
            if !outcome.delivered.isEmpty {
                try await connection.execute(
                    """
                    DELETE FROM webhook_backlog WHERE zone_id = ? AND seq <= (SELECT MIN(s.delivered_seq) FROM webhook_streams s
                        JOIN webhooks w ON w.id = s.webhook_id WHERE s.zone_id = ? AND w.enabled = 1)
                    """, [.int(claim.stream), .int(claim.stream)])
            }
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

    /// The events the endpoint has still to receive, as they would be sent, oldest first in each
    /// zone (zones in row order): what `webhook list` counts, built whole.
    package func pendingWebhookEvents(id: String, limit: Int = 10_000) async throws -> [WebhookDelivery] {
        try await driver.read { connection in
            guard let webhook = try await connection.first("SELECT \(Self.webhookColumns) FROM webhooks WHERE id = ?", [.text(id)]).map(Self.webhook)
            else { throw Self.unknownWebhook(id) }
            var events: [WebhookDelivery] = []
            for stream in try await connection.rows("SELECT zone_id, delivered_seq FROM webhook_streams WHERE webhook_id = ? ORDER BY zone_id",
                                                    [.text(id)]) {
                guard let zone = try await self.webhookZone(stream.int(0), connection) else { continue }
                var position = stream.int(1)
                while events.count < limit {
                    let window = try await self.webhookEvents(for: webhook, zone: zone, after: position, chunk: limit - events.count, connection)
                    events += window.events
                    if window.through == position { break }
                    position = window.through
                }
            }
            return events
        }
    }

    /// What an event's body needs of its zone.
    struct WebhookZone {
        var row: ZoneRow
        var scope: DatabaseScope
        var deleted: Bool
        var shared: Bool
    }

    private func webhookZone(_ zoneRowID: Int64, _ connection: any StoreConnection) async throws -> WebhookZone? {
        guard let row = try await connection.first(
            """
            SELECT z.name, z.seq, z.deleted, d.container, d.environment, d.user_id, u.record_name,
                CASE WHEN EXISTS (SELECT 1 FROM shares s WHERE s.zone_id = z.id) THEN 1 ELSE 0 END
            FROM zones z JOIN databases d ON d.id = z.database_id LEFT JOIN users u ON u.id = d.user_id WHERE z.id = ?
            """, [.int(zoneRowID)]),
            let environment = Environment(rawValue: row.text(4))
        else { return nil }
        let ownerID = row.int(5)
        let owner = User(id: ownerID, name: "", recordName: row.optionalText(6) ?? "")
        let scope = ownerID == DatabaseScope.publicOwnerID
            ? DatabaseScope.publicDatabase(caller: nil, container: row.text(3), environment: environment)
            : DatabaseScope(user: owner, container: row.text(3), environment: environment)
        return WebhookZone(row: ZoneRow(id: zoneRowID, name: row.text(0), seq: row.int(1), purgedSeq: 0), scope: scope,
                           deleted: row.int(2) != 0, shared: row.int(7) != 0)
    }

    /// The endpoint's next events in the zone after `position`: the changes the records table
    /// holds merged with the backlog, in sequence order, at most `chunk` selected ones, and the
    /// sequence examined up to (`through`: where the position goes once they are delivered).
    private func webhookEvents(for webhook: Webhook, zone: WebhookZone, after position: Int64, chunk: Int,
                               _ connection: any StoreConnection) async throws -> (events: [WebhookDelivery], through: Int64)
    {
        let couldSelect = WebhookEventKind.allCases.contains {
            webhook.selects($0, recordType: nil, zone: zone.row.name, scope: zone.scope, zoneIsShared: zone.shared)
        }
        // A zone the endpoint never selects (another container, another zone): straight to its end.
        if !couldSelect && !zone.deleted {
            let backlogEnd = try await connection.scalarInt("SELECT MAX(seq) FROM webhook_backlog WHERE zone_id = ?", [.int(zone.row.id)]) ?? 0
            return ([], max(position, zone.row.seq, backlogEnd))
        }
        let shared = WebhookRules.sharedMembers
        var events: [WebhookDelivery] = []
        var through = position
        // Bounded: a long run of changes the filters pass over is stepped over a window at a time.
        for _ in 0..<64 where events.count < chunk {
            let window = max(chunk - events.count, 100)
            let records = try await connection.rows(
                "SELECT seq, deleted, name, type, tag, fields, modified_at FROM records WHERE zone_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                [.int(zone.row.id), .int(through), .int(Int64(window))])
            let kept = try await connection.rows(
                """
                SELECT seq, kind, record_name, record_type, tag, fields, created_at, zone_shared FROM webhook_backlog
                WHERE zone_id = ? AND seq > ? ORDER BY seq LIMIT ?
                """, [.int(zone.row.id), .int(through), .int(Int64(window))])
            guard !records.isEmpty || !kept.isEmpty else {
                // Nothing after the position, though the zone's sequence is past it: those changes are gone
                // (tombstones purged, a zone deleted while no enabled endpoint followed it).
                through = max(through, zone.row.seq)
                break
            }
            // Both are in sequence order; a change read from both (moved to the backlog between the two reads) counts once.
            var changes: [(sequence: Int64, row: StoreRow, fromBacklog: Bool)] = records.map { ($0.int(0), $0, false) }
            let recordSequences = Set(records.map { $0.int(0) })
            for row in kept where !recordSequences.contains(row.int(0)) { changes.append((row.int(0), row, true)) }
            changes.sort { $0.sequence < $1.sequence }
            // Only as far as both reads reach: past the end of one, the other may still hold earlier changes.
            let reach = min(records.count == window ? records.last!.int(0) : .max, kept.count == window ? kept.last!.int(0) : .max)
            for change in changes where change.sequence <= reach {
                if events.count == chunk { break }
                through = change.sequence
                let row = change.row
                let kind = change.fromBacklog ? row.int(1) : row.int(1) == 0 ? WebhookBacklogKind.changed : WebhookBacklogKind.deleted
                let zoneShared = change.fromBacklog ? row.int(7) != 0 || zone.shared : zone.shared
                let event: WebhookRules.Event
                let eventKind: WebhookEventKind
                switch kind {
                case WebhookBacklogKind.zoneDeleted:
                    event = WebhookRules.Event(type: "zone.deleted", sequence: change.sequence)
                    eventKind = .deleted
                case WebhookBacklogKind.deleted:
                    event = WebhookRules.Event(type: "record.deleted", recordName: row.text(2), recordType: row.text(3), changeTag: row.text(4),
                                               sequence: change.sequence)
                    eventKind = .deleted
                default:
                    event = WebhookRules.Event(type: "record.changed", recordName: row.text(2), recordType: row.text(3), changeTag: row.text(4),
                                               sequence: change.sequence, fieldsJSON: row.blob(5))
                    eventKind = .changed
                }
                guard webhook.selects(eventKind, recordType: event.recordType, zone: zone.row.name, scope: zone.scope, zoneIsShared: zoneShared)
                else { continue }
                let id = WebhookRules.eventID(zoneRowID: zone.row.id, sequence: change.sequence)
                let token = FeedRules.zoneToken(storeID: storeID, zone: ZoneRow(id: zone.row.id, name: zone.row.name, seq: change.sequence, purgedSeq: 0))
                let body = WebhookRules.body(event, id: id, shared: shared(row.int(6), zone.scope, zone.row.name), syncToken: token,
                                             fields: webhook.fields)
                events.append(WebhookDelivery(sequence: change.sequence, eventID: id, body: body, attempts: 0, firstFailedAt: nil))
            }
            if reach == .max { break }  // both reads ended: nothing more
        }
        return (events, through)
    }

    /// Frees every lease (a daemon starting on a store no other daemon serves: SQLite's, whose
    /// leases can only be those of a daemon that was killed).
    package func releaseWebhookLeases() async throws {
        _ = try await driver.write { connection in
            try await connection.execute("UPDATE webhook_streams SET lease_owner = NULL, lease_until = 0 WHERE lease_until > 0")
        }
    }

    /// Drops the backlog no enabled endpoint still needs, the positions in zones that are gone,
    /// and attempts older than `attemptRetention`; returns how many backlog rows went.
    package func purgeWebhookHistory(attemptRetentionMilliseconds: Int64) async throws -> Int {
        let now = clock()
        return try await driver.write { connection in
            let kept = try await connection.execute(
                """
                DELETE FROM webhook_backlog WHERE NOT EXISTS (SELECT 1 FROM webhook_streams s JOIN webhooks w ON w.id = s.webhook_id
                    WHERE w.enabled = 1 AND s.zone_id = webhook_backlog.zone_id AND s.delivered_seq < webhook_backlog.seq)
                """)
            try await connection.execute(
                """
                DELETE FROM webhook_streams WHERE zone_id NOT IN (SELECT id FROM zones WHERE deleted = 0)
                AND NOT EXISTS (SELECT 1 FROM webhook_backlog b WHERE b.zone_id = webhook_streams.zone_id)
                """)
            try await connection.execute("DELETE FROM webhook_attempts WHERE attempted_at < ?", [.int(now - attemptRetentionMilliseconds)])
            return kept
        }
    }

    /// How many endpoints there are, how many are disabled, and how many events wait in total
    /// (for `/metrics`).
    package func webhookGauges() async throws -> (endpoints: Int, disabled: Int, pending: Int) {
        try await driver.readStatement { connection in
            let row = try await connection.first("SELECT (SELECT COUNT(*) FROM webhooks), (SELECT COUNT(*) FROM webhooks WHERE enabled = 0)")
            let pending = try await connection.rows(Self.pendingCounts).reduce(0) { $0 + Int($1.int(1)) }
            return (Int(row?.int(0) ?? 0), Int(row?.int(1) ?? 0), pending)
        }
    }
}

/// `webhook_backlog.kind` (a record's row says `deleted` 0 or 1, the same two codes).
enum WebhookBacklogKind {
    static let changed: Int64 = 0
    static let deleted: Int64 = 1
    static let zoneDeleted: Int64 = 2
}
