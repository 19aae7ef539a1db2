import Foundation
import RecordModel
import RecordStore
import XCTest

/// Webhook events are the zones' committed changes (none for a rolled-back batch), one per record
/// a cascade removes and one per zone deletion, selected by each endpoint's filters, and leased one
/// stream (endpoint and zone) at a time, in order; a change writes nothing for them unless it
/// replaces a state an enabled endpoint has not had; on SQLite and on PostgreSQL.
final class WebhookOutboxTests: StoreTestCase {
    var engine: StoreEngine { store.base.engine }

    @discardableResult
    func addWebhook(_ webhook: Webhook) throws -> Webhook {
        let engine = engine
        return try BlockingStore.run { try await engine.addWebhook(webhook) }
    }

    /// The events the endpoint has still to receive, as they would be sent, as JSON.
    func queued(_ webhookID: String) throws -> [JSONValue] {
        let engine = engine
        return try BlockingStore.run { try await engine.pendingWebhookEvents(id: webhookID) }.map { try JSONValue.parse($0.body) }
    }

    /// How many rows the table holds.
    func count(_ table: String) throws -> Int64 {
        let engine = engine
        return try BlockingStore.run { try await engine.driver.read { try await $0.scalarInt("SELECT COUNT(*) FROM \(table)") ?? 0 } }
    }

    func purge() throws -> Int {
        let engine = engine
        return try BlockingStore.run { try await engine.purgeWebhookHistory(attemptRetentionMilliseconds: 86_400_000) }
    }

    func claim(owner: String, chunk: Int = 100) throws -> [WebhookStreamClaim] {
        let engine = engine
        return try BlockingStore.run {
            let heads = try await engine.webhookStreamHeads(limit: 100).heads
            return try await engine.claimWebhookStreams(heads, owner: owner, leaseMilliseconds: 60_000, chunk: chunk)
        }
    }

    func finish(_ claim: WebhookStreamClaim, owner: String, delivered: Int, failRetryAt: Int64? = nil) throws {
        var outcome = WebhookStreamOutcome()
        outcome.delivered = claim.events.prefix(delivered).map(\.sequence)
        if let failRetryAt, delivered < claim.events.count {
            outcome.failed = (claim.events[delivered].sequence, failRetryAt)
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

    func testStreamsAreClaimedOneDaemonAtATimeAndAFailureHoldsBackItsZoneOnly() throws {
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
        if Self.backend == .postgres {
            XCTAssertTrue(try claim(owner: "daemon-2").isEmpty, "leased streams are not handed to another daemon")
        }  // On SQLite one daemon serves the store: its delivery service does not claim a stream it is delivering.

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

    func testReplayDeliversAgainFromATimeOrASyncToken() throws {
        let hook = try addWebhook(Webhook(url: "https://example.com/hook"))
        for index in 0..<4 { try save(dev, record("g\(index)", "Game", ["name": field("G", "STRING")])) }
        let claims = try claim(owner: "d")
        let events = try claims[0].events.map { try JSONValue.parse($0.body) }
        try finish(claims[0], owner: "d", delivered: 4)
        XCTAssertTrue(try claim(owner: "d").isEmpty)

        let token = events[1]["data"]!["syncToken"]!.stringValue!
        let engine = engine
        XCTAssertEqual(try BlockingStore.run { try await engine.replayWebhook(id: hook.id, from: .syncToken(token)) }, 2)
        let replayed = try claim(owner: "d")
        XCTAssertEqual(replayed.first?.events.map(\.eventID), events[2...].map { $0["id"]!.stringValue! }, "the same ids, in order")
        try finish(replayed[0], owner: "d", delivered: 2)
        XCTAssertEqual(try BlockingStore.run { try await engine.replayWebhook(id: hook.id, from: .timestamp(0)) }, 4)
        XCTAssertThrowsError(try BlockingStore.run { try await engine.replayWebhook(id: "wh_missing", from: .timestamp(0)) })
    }

    func testAChangeWritesNothingForWebhooksUnlessItReplacesAStateAnEndpointLacks() throws {
        let hook = try addWebhook(Webhook(url: "https://example.com/hook"))
        let created = try save(dev, record("g", "Game", ["name": field("Catan", "STRING")]))
        try save(dev, record("h", "Game", ["name": field("Go", "STRING")]))
        XCTAssertEqual(try count("webhook_backlog"), 0, "new records are read from the records table")
        for claim in try claim(owner: "d") { try finish(claim, owner: "d", delivered: claim.events.count) }
        let updated = try save(dev, .update, record("g", "Game", ["name": field("Carcassonne", "STRING")], tag: created.changeTag))
        XCTAssertEqual(try count("webhook_backlog"), 0, "the state it replaced was delivered")

        let replaced = try save(dev, .update, record("g", "Game", ["name": field("Agricola", "STRING")], tag: updated.changeTag))
        XCTAssertEqual(try count("webhook_backlog"), 1, "the endpoint has not had the state this update replaced")
        let pending = try queued(hook.id)
        XCTAssertEqual(pending.map { $0["data"]?["recordChangeTag"]?.stringValue }, [updated.changeTag, replaced.changeTag])
        XCTAssertEqual(pending.map { $0["data"]?["fields"]?["name"]?["value"]?.stringValue }, ["Carcassonne", "Agricola"],
                       "each event carries its own state's fields")
        for claim in try claim(owner: "d") { try finish(claim, owner: "d", delivered: claim.events.count) }
        XCTAssertEqual(try count("webhook_backlog"), 0, "delivered to every enabled endpoint, the kept state goes")
    }

    func testTheBacklogKeepsAReplacedStateOnlyWhileAnEnabledEndpointLacksIt() throws {
        let delivered = try addWebhook(Webhook(url: "https://example.com/delivered"))
        let failing = try addWebhook(Webhook(url: "https://example.com/failing"))
        let disabled = try addWebhook(Webhook(url: "https://example.com/disabled"))
        let engine = engine
        try BlockingStore.run { try await engine.setWebhookEnabled(id: disabled.id, false) }
        let first = try save(dev, record("g", "Game", ["name": field("G", "STRING")]))
        let second = try save(dev, .update, record("g", "Game", ["name": field("H", "STRING")], tag: first.changeTag))
        XCTAssertEqual(try queued(delivered.id).map { $0["data"]?["recordChangeTag"]?.stringValue }, [first.changeTag, second.changeTag],
                       "the replaced state first, then the record as it is")
        for claim in try claim(owner: "d") where claim.webhook.id == delivered.id { try finish(claim, owner: "d", delivered: 2) }
        XCTAssertEqual(try purge(), 0, "the failing endpoint still lacks the replaced state")
        XCTAssertEqual(try queued(failing.id).count, 2)
        try BlockingStore.run { try await engine.setWebhookEnabled(id: failing.id, false) }
        XCTAssertEqual(try purge(), 1, "no enabled endpoint lacks it any more")
        XCTAssertEqual(try queued(disabled.id).map { $0["data"]?["recordChangeTag"]?.stringValue }, [second.changeTag],
                       "a disabled endpoint hears of the record as it is now")
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
        XCTAssertThrowsError(try queued(hook.id))
        XCTAssertEqual(try count("webhook_streams"), 0, "its positions went with it")
        XCTAssertThrowsError(try BlockingStore.run { try await engine.removeWebhook(id: hook.id) })
    }
}
