import Foundation
import RecordModel
import RecordStore
import XCTest

/// Issue 46: webhook events are written in the change's own transaction (none for a rolled-back
/// batch), one per record a cascade removes and one per zone deletion, selected by each
/// endpoint's filters, and leased from the queue one stream (endpoint and zone) at a time, in
/// order; on SQLite and on PostgreSQL.
final class WebhookOutboxTests: StoreTestCase {
    var engine: StoreEngine { store.base.engine }

    @discardableResult
    func addWebhook(_ webhook: Webhook) throws -> Webhook {
        let engine = engine
        return try BlockingStore.run { try await engine.addWebhook(webhook) }
    }

    /// Every event queued for the endpoint, delivered or not, oldest first, as JSON.
    func queued(_ webhookID: String) throws -> [JSONValue] {
        let engine = engine
        return try BlockingStore.run {
            try await engine.driver.read { connection in
                try await connection.rows("SELECT payload FROM webhook_events WHERE webhook_id = ? ORDER BY id", [.text(webhookID)])
                    .map { try JSONValue.parse($0.blob(0)) }
            }
        }
    }

    func claim(owner: String, chunk: Int = 100) throws -> [WebhookStreamClaim] {
        let engine = engine
        return try BlockingStore.run {
            let heads = try await engine.webhookStreamHeads(limit: 100)
            return try await engine.claimWebhookStreams(heads, owner: owner, leaseMilliseconds: 60_000, chunk: chunk)
        }
    }

    func finish(_ claim: WebhookStreamClaim, owner: String, delivered: Int, failRetryAt: Int64? = nil) throws {
        var outcome = WebhookStreamOutcome()
        outcome.delivered = claim.events.prefix(delivered).map(\.rowID)
        if let failRetryAt, delivered < claim.events.count {
            outcome.failed = (claim.events[delivered].rowID, failRetryAt)
            outcome.attempts.append(WebhookAttempt(eventID: claim.events[delivered].eventID, attemptedAt: clock.now, status: 500,
                                                   latencyMilliseconds: 3, error: "HTTP 500"))
        }
        let (engine, finished) = (engine, outcome)
        _ = try BlockingStore.run { try await engine.finishWebhookStream(claim, owner: owner, outcome: finished, retryWindowMilliseconds: 86_400_000) }
    }

    func testEachCommittedChangeQueuesOneSignedEventInCommitOrder() throws {
        let hook = try addWebhook(Webhook(url: "https://example.com/hook"))
        let saved = try save(dev, record("g1", "Game", ["name": field("Catan", "STRING")]))
        let updated = try save(dev, .update, record("g1", "Game", ["name": field("Carcassonne", "STRING")], tag: saved.changeTag))
        try modify(dev, [(.forceDelete, record("g1"))])

        let events = try queued(hook.id)
        XCTAssertEqual(events.map { $0["type"]?.stringValue }, ["record.changed", "record.changed", "record.deleted"])
        XCTAssertEqual(Set(events.compactMap { $0["id"]?.stringValue }).count, 3, "each event its own id")
        XCTAssertEqual(events[0]["data"]?["recordChangeTag"]?.stringValue, saved.changeTag)
        XCTAssertEqual(events[1]["data"]?["recordChangeTag"]?.stringValue, updated.changeTag)
        XCTAssertEqual(events[1]["data"]?["fields"]?["name"]?["value"]?.stringValue, "Carcassonne")
        XCTAssertNil(events[2]["data"]?["fields"], "a deletion carries no fields")
        XCTAssertNotEqual(events[2]["data"]?["recordChangeTag"]?.stringValue, updated.changeTag, "the deletion's own tag")
        let data = events[0]["data"]!
        XCTAssertEqual(data["container"]?.stringValue, Self.container)
        XCTAssertEqual(data["environment"]?.stringValue, "development")
        XCTAssertEqual(data["database"]?.stringValue, "private")
        XCTAssertEqual(data["zone"]?.stringValue, "_defaultZone")
        XCTAssertEqual(data["owner"]?.stringValue, alice.recordName)
        XCTAssertEqual(data["recordName"]?.stringValue, "g1")
        XCTAssertEqual(data["recordType"]?.stringValue, "Game")
        XCTAssertTrue(events[0]["timestamp"]?.stringValue?.hasSuffix("Z") == true)

        // The event's sync token fetches what came after it.
        let token = events[1]["data"]!["syncToken"]!.stringValue!
        let after = try store.zoneChanges(dev, zone: .default, syncToken: token, resultsLimit: 10, recordTypes: nil)
        XCTAssertEqual(after.changes.count, 1, "only the deletion follows the update")
    }

    func testARolledBackAtomicBatchQueuesNothing() throws {
        let hook = try addWebhook(Webhook(url: "https://example.com/hook"))
        let results = try modify(dev, atomic: true, [
            (.create, record("ok", "Game", ["name": field("A", "STRING")])),
            (.update, record("missing", "Game", ["name": field("B", "STRING")], tag: "nope")),
        ])
        XCTAssertTrue(results.contains { if case .failed = $0 { return true } else { return false } })
        XCTAssertEqual(try queued(hook.id).count, 0)
        XCTAssertTrue(try claim(owner: "a").isEmpty)
    }

    func testACascadeQueuesOneDeletionPerRecordAndAZoneDeletionOneEvent() throws {
        let hook = try addWebhook(Webhook(url: "https://example.com/hook", events: [.deleted]))
        _ = try store.createZone(dev, zoneName: "Book")
        let zone = ZoneID(zoneName: "Book")
        try modify(dev, zone: zone, [
            (.create, record("game", "Game", ["name": field("Catan", "STRING")])),
            (.create, record("match", "Match", ["game": ref("game", .deleteSelf)])),
            (.create, record("score", "Score", ["match": ref("match", .deleteSelf)])),
        ])
        XCTAssertEqual(try queued(hook.id).count, 0, "changes are not selected")
        try modify(dev, zone: zone, [(.forceDelete, record("game"))])
        let deleted = try queued(hook.id)
        XCTAssertEqual(deleted.map { $0["type"]?.stringValue }, Array(repeating: "record.deleted", count: 3))
        XCTAssertEqual(Set(deleted.compactMap { $0["data"]?["recordName"]?.stringValue }), ["game", "match", "score"])

        try modify(dev, zone: zone, [(.create, record("other", "Game", ["name": field("Go", "STRING")]))])
        try store.deleteZone(dev, zoneName: "Book")
        let all = try queued(hook.id)
        XCTAssertEqual(all.count, 4, "one zone.deleted, not a record.deleted for each record the zone held")
        XCTAssertEqual(all.last?["type"]?.stringValue, "zone.deleted")
        XCTAssertEqual(all.last?["data"]?["zone"]?.stringValue, "Book")
        XCTAssertNil(all.last?["data"]?["recordName"])
    }

    func testFiltersChooseTheEndpointsAndFieldsOfEachEvent() throws {
        let bob = try store.createUser(name: "bob").user
        let bobDev = try scope(bob, .development)
        let zoneOnly = try addWebhook(Webhook(url: "https://example.com/zone", zone: "Book"))
        let scores = try addWebhook(Webhook(url: "https://example.com/scores", recordType: "Score", fields: .names(["value"])))
        let alicesOwn = try addWebhook(Webhook(url: "https://example.com/alice", ownerUserID: alice.id, container: Self.container,
                                               environment: .development, database: .private, fields: .none))
        let production = try addWebhook(Webhook(url: "https://example.com/prod", environment: .production))
        let otherContainer = try addWebhook(Webhook(url: "https://example.com/other", container: "iCloud.other"))
        _ = try store.createZone(dev, zoneName: "Book")
        try modify(dev, zone: ZoneID(zoneName: "Book"), [
            (.create, record("s1", "Score", ["value": field(.double(3), "DOUBLE"), "note": field("x", "STRING")])),
        ])
        try modify(bobDev, [(.create, record("g", "Game", ["name": field("Go", "STRING")]))])

        XCTAssertEqual(try queued(zoneOnly.id).count, 1)
        let score = try queued(scores.id)
        XCTAssertEqual(score.count, 1)
        XCTAssertEqual(score.first?["data"]?["fields"]?.objectValue?.keys.sorted(), ["value"])
        let own = try queued(alicesOwn.id)
        XCTAssertEqual(own.count, 1, "alice's endpoint hears of alice's zones only")
        XCTAssertNil(own.first?["data"]?["fields"], "--fields none")
        XCTAssertEqual(try queued(production.id).count, 0)
        XCTAssertEqual(try queued(otherContainer.id).count, 0)
    }

    func testStreamsAreLeasedOneDaemonAtATimeAndAFailureHoldsBackItsZoneOnly() throws {
        let hook = try addWebhook(Webhook(url: "https://example.com/hook"))
        _ = try store.createZone(dev, zoneName: "A")
        _ = try store.createZone(dev, zoneName: "B")
        for index in 0..<3 {
            try modify(dev, zone: ZoneID(zoneName: "A"), [(.create, record("a\(index)", "Game", ["name": field("A", "STRING")]))])
            try modify(dev, zone: ZoneID(zoneName: "B"), [(.create, record("b\(index)", "Game", ["name": field("B", "STRING")]))])
        }
        let first = try claim(owner: "daemon-1", chunk: 2)
        XCTAssertEqual(first.count, 2, "one claim per zone")
        XCTAssertEqual(first.map(\.events.count), [2, 2], "a chunk of each zone, in order")
        XCTAssertTrue(try claim(owner: "daemon-2").isEmpty, "leased streams are not handed to another daemon")

        let zoneA = first.first { $0.events.first.map { String(decoding: $0.body, as: UTF8.self).contains("\"a0\"") } ?? false }!
        let zoneB = first.first { $0.stream != zoneA.stream }!
        try finish(zoneA, owner: "daemon-1", delivered: 0, failRetryAt: clock.now + 60_000)
        try finish(zoneB, owner: "daemon-1", delivered: 2)

        let second = try claim(owner: "daemon-2")
        XCTAssertEqual(second.count, 1, "zone A waits for its failed event's retry; zone B goes on")
        XCTAssertEqual(second.first?.stream, zoneB.stream)
        XCTAssertEqual(second.first?.events.count, 1)
        try finish(second[0], owner: "daemon-2", delivered: 1)

        clock.advance(milliseconds: 61_000)
        let retry = try claim(owner: "daemon-1")
        XCTAssertEqual(retry.count, 1)
        XCTAssertEqual(retry.first?.events.map(\.eventID), zoneA.events.map(\.eventID) + [retry[0].events[2].eventID],
                       "the failed event first, with its id, then the rest of its zone")
        XCTAssertEqual(retry.first?.events.first?.attempts, 1)
        try finish(retry[0], owner: "daemon-1", delivered: 3)
        XCTAssertTrue(try claim(owner: "daemon-1").isEmpty)
        let engine = engine
        XCTAssertEqual(try BlockingStore.run { try await engine.pendingWebhookEvents() }[hook.id] ?? 0, 0)
        let attempts = try BlockingStore.run { try await engine.webhookAttempts(id: hook.id, failedOnly: true, limit: 10) }
        XCTAssertEqual(attempts.map(\.status), [500])
    }

    func testReplayQueuesKeptEventsAgainFromATimeOrASyncToken() throws {
        let hook = try addWebhook(Webhook(url: "https://example.com/hook"))
        for index in 0..<4 { try save(dev, record("g\(index)", "Game", ["name": field("G", "STRING")])) }
        let claims = try claim(owner: "d")
        try finish(claims[0], owner: "d", delivered: 4)
        XCTAssertTrue(try claim(owner: "d").isEmpty)

        let events = try queued(hook.id)
        let token = events[1]["data"]!["syncToken"]!.stringValue!
        let engine = engine
        XCTAssertEqual(try BlockingStore.run { try await engine.replayWebhook(id: hook.id, from: .syncToken(token)) }, 2)
        let replayed = try claim(owner: "d")
        XCTAssertEqual(replayed.first?.events.map(\.eventID), events[2...].map { $0["id"]!.stringValue! }, "the same ids, in order")
        try finish(replayed[0], owner: "d", delivered: 2)
        XCTAssertEqual(try BlockingStore.run { try await engine.replayWebhook(id: hook.id, from: .timestamp(0)) }, 4)
        XCTAssertThrowsError(try BlockingStore.run { try await engine.replayWebhook(id: "wh_missing", from: .timestamp(0)) })
    }

    func testThePurgeKeepsAWeekOfDeliveredEventsAndEveryEventStillToDeliver() throws {
        let delivered = try addWebhook(Webhook(url: "https://example.com/delivered"))
        let failing = try addWebhook(Webhook(url: "https://example.com/failing"))
        let disabled = try addWebhook(Webhook(url: "https://example.com/disabled"))
        let engine = engine
        try BlockingStore.run { try await engine.setWebhookEnabled(id: disabled.id, false) }
        try save(dev, record("g", "Game", ["name": field("G", "STRING")]))
        for claim in try claim(owner: "d") where claim.webhook.id == delivered.id { try finish(claim, owner: "d", delivered: 1) }
        let week: Int64 = 7 * 86_400_000
        XCTAssertEqual(try BlockingStore.run { try await engine.purgeWebhookHistory(eventRetentionMilliseconds: week,
                                                                                    attemptRetentionMilliseconds: week) }, 0)
        clock.advance(days: 8)
        XCTAssertEqual(try BlockingStore.run { try await engine.purgeWebhookHistory(eventRetentionMilliseconds: week,
                                                                                    attemptRetentionMilliseconds: week) }, 2)
        XCTAssertEqual(try queued(delivered.id).count, 0)
        XCTAssertEqual(try queued(disabled.id).count, 0, "a disabled endpoint's queue is bounded by the retention")
        XCTAssertEqual(try queued(failing.id).count, 1, "an enabled endpoint's undelivered event is never dropped")
    }

    func testADisabledEndpointKeepsItsEventsAndRemovingItDropsThem() throws {
        let hook = try addWebhook(Webhook(url: "https://example.com/hook"))
        let engine = engine
        try BlockingStore.run { try await engine.setWebhookEnabled(id: hook.id, false, reason: "disabled by an operator") }
        try save(dev, record("g", "Game", ["name": field("G", "STRING")]))
        XCTAssertTrue(try claim(owner: "d").isEmpty, "nothing is delivered to a disabled endpoint")
        XCTAssertEqual(try queued(hook.id).count, 1, "but its events wait")
        XCTAssertEqual(try BlockingStore.run { try await engine.webhooks() }.first?.disabledReason, "disabled by an operator")
        try BlockingStore.run { try await engine.setWebhookEnabled(id: hook.id, true) }
        XCTAssertEqual(try claim(owner: "d").first?.events.count, 1)
        try BlockingStore.run { try await engine.removeWebhook(id: hook.id) }
        XCTAssertEqual(try queued(hook.id).count, 0)
        XCTAssertThrowsError(try BlockingStore.run { try await engine.removeWebhook(id: hook.id) })
    }
}
