import Foundation
import RecordModel
import RecordStore
import XCTest

/// Deletions of every kind, rolled-back batches, and the outbox itself: order, durability,
/// isolation between users, retention.
final class SubscriptionOutboxTests: SubscriptionStoreTestCase {
    let zone = "ScorebookData"

    /// The Scorebook graph in production (schema enforced): Game ← Match ← Player ← Score, plus a
    /// Person the Player also points at. Returns the record names.
    func makeScorebookGraph(_ scope: DatabaseScope) throws -> (game: String, match: String, player: String, score: String, person: String) {
        _ = try store.createZone(scope, zoneName: zone)
        let game = newName("Game"), match = newName("Match"), player = newName("Player"), score = newName("Score")
        let person = newName("Person")
        let results = try modify(zone, scope: scope, [
            (.create, wireRecord(person, "Person", ["firstName": stringField("Ada")])),
            (.create, wireRecord(game, "Game", ["name": stringField("Catan"), "lowScoreWins": intField(0)])),
            (.create, wireRecord(match, "Match", ["game": deleteSelfReference(game), "notes": stringField("friday")])),
            (.create, wireRecord(player, "Player", ["match": deleteSelfReference(match), "person": deleteSelfReference(person),
                                                    "seat": intField(1)])),
            (.create, wireRecord(score, "Score", ["player": deleteSelfReference(player), "value": doubleField(10), "round": intField(1)])),
        ])
        for result in results { _ = try savedTag(result) }
        return (game, match, player, score, person)
    }

    func subscribeToDeletions(_ scope: DatabaseScope, types: [String]) throws {
        for type in types {
            try subscribe(querySubscription("\(type)-deleted", type: type, zone: zone, firesOn: ["delete"],
                                            desiredKeys: ["name", "notes", "seat", "value"]), scope: scope)
        }
    }

    /// The record type a deletion notification names, read only from its `rid` prefix (what a
    /// client has once the record is gone).
    func typeFromRecordName(_ ck: JSONValue) -> String? {
        guard let rid = ck["qry"]?["rid"]?.stringValue, let range = rid.range(of: "|~|") else { return nil }
        return String(rid[..<range.lowerBound])
    }

    func testCascadeDeletionNotifiesEveryTypeThroughItsOwnSubscription() throws {
        let prod = DatabaseScope(user: user, container: Self.container, environment: .production)
        let channel = try store.createPushToken(prod, apnsEnvironment: "production")
        (databaseID, cursor) = (channel.databaseID, channel.startCursor)
        let graph = try makeScorebookGraph(prod)
        try subscribeToDeletions(prod, types: ["Game", "Match", "Player", "Score", "Person"])
        try assertNoNotification("creations with delete-only subscriptions")

        let result = try modify(zone, scope: prod, [(.forceDelete, ["recordName": .string(graph.game)])])
        guard case .deleted = result.first else { return XCTFail("delete Game: \(result)") }
        let fired = try newNotifications()
        XCTAssertEqual(fired.count, 4, "Game, Match, Player and Score each notify once: \(fired.map { $0.serializedString() })")
        let byType = Dictionary(fired.map { (typeFromRecordName($0) ?? "?", $0) }, uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(Set(byType.keys), ["Game", "Match", "Player", "Score"])
        for (type, name) in [("Game", graph.game), ("Match", graph.match), ("Player", graph.player), ("Score", graph.score)] {
            guard let ck = byType[type] else { continue }
            assertQuery(ck, sid: "\(type)-deleted", rid: name, fo: 3, zone: zone)
        }
        XCTAssertNil(byType["Person"], "the Person is not a DELETE_SELF child of the Game")
    }

    func testDeletingAPersonCascadesToPlayersAndScoresOnly() throws {
        let prod = DatabaseScope(user: user, container: Self.container, environment: .production)
        let channel = try store.createPushToken(prod, apnsEnvironment: "development")
        (databaseID, cursor) = (channel.databaseID, channel.startCursor)
        let graph = try makeScorebookGraph(prod)
        try subscribeToDeletions(prod, types: ["Game", "Match", "Player", "Score", "Person"])
        _ = try modify(zone, scope: prod, [(.forceDelete, ["recordName": .string(graph.person)])])
        let fired = try newNotifications()
        XCTAssertEqual(fired.compactMap(typeFromRecordName).sorted(), ["Person", "Player", "Score"])
        XCTAssertEqual(Set(fired.compactMap { $0["qry"]?["rid"]?.stringValue }), [graph.person, graph.player, graph.score])
    }

    func testZoneDeletionNotifiesEachRecordAsADeletionAndFiresZoneAndDatabaseSubscriptions() throws {
        let graph = try makeScorebookGraph(dev)
        try subscribeToDeletions(dev, types: ["Game", "Match", "Player", "Score", "Person"])
        try subscribe(zoneSubscription("zone", zone: zone), databaseSubscription("db"),
                      querySubscription("games-created", type: "Game", zone: zone, firesOn: ["create", "update"]))
        try store.deleteZone(dev, zoneName: zone)
        let fired = try newNotifications()
        let queries = fired.filter { $0["qry"] != nil }
        XCTAssertEqual(queries.count, 5, "one deletion per record: \(fired.map { $0.serializedString() })")
        XCTAssertEqual(Set(queries.compactMap { $0["qry"]?["rid"]?.stringValue }),
                       [graph.game, graph.match, graph.player, graph.score, graph.person])
        for ck in queries {
            let type = typeFromRecordName(ck) ?? "?"
            assertQuery(ck, sid: "\(type)-deleted", rid: ck["qry"]?["rid"]?.stringValue ?? "", fo: 3, zone: zone)
        }
        XCTAssertEqual(fired.filter { $0["fet"]?["sid"] == "zone" }.count, 1)
        XCTAssertEqual(fired.filter { $0["met"]?["sid"] == "db" }.count, 1)
        XCTAssertEqual(fired.count, 7, "and nothing for the create/update-only subscription")
    }

    func testRolledBackAtomicBatchNotifiesNobody() throws {
        _ = try store.createZone(dev, zoneName: zone)
        let existing = newName("Game")
        let tag = try create(zone, existing, "Game", ["name": stringField("Catan")])
        try subscribe(databaseSubscription("db"), zoneSubscription("zone", zone: zone),
                      querySubscription("games", type: "Game", zone: zone))
        try assertNoNotification("setup")

        // Creates, an update and a delete that would succeed, and one stale-tag update that fails.
        let victim = newName("Game")
        _ = try create(zone, victim, "Game")
        _ = try newNotifications()
        let results = try modify(zone, [
            (.create, wireRecord(newName("Game"), "Game", ["name": stringField("new")])),
            (.forceUpdate, wireRecord(victim, "Game", ["name": stringField("changed")])),
            (.forceDelete, ["recordName": .string(newName("Game"))]),
            (.update, wireRecord(existing, "Game", ["name": stringField("stale")], tag: tag + "-stale")),
        ])
        let codes = results.map { result -> ServerErrorCode? in
            if case .failed(let error) = result { return error.code }
            return nil
        }
        XCTAssertEqual(codes, [.atomicError, .atomicError, .atomicError, .conflict])
        try assertNoNotification("a rolled-back atomic batch")

        // A failing cascade (a VALIDATE reference blocks it) rolls back too.
        let child = newName("Match")
        try create(zone, child, "Match", ["game": ["value": ["recordName": .string(existing), "action": "VALIDATE"], "type": "REFERENCE"]])
        _ = try newNotifications()
        let blocked = try modify(zone, [(.forceDelete, ["recordName": .string(existing)])])
        guard case .failed(let error) = blocked.first else { return XCTFail("delete blocked by VALIDATE: \(blocked)") }
        XCTAssertEqual(error.code, .validatingReferenceError)
        try assertNoNotification("a deletion refused by a VALIDATE reference")

        // Non-atomic: only what was applied notifies.
        let applied = newName("Game")
        _ = try modify(zone, atomic: false, [
            (.create, wireRecord(applied, "Game")),
            (.create, wireRecord(existing, "Game")),  // EXISTS
        ])
        let fired = try newNotifications()
        XCTAssertEqual(fired.compactMap { $0["qry"]?["rid"]?.stringValue }, [applied])
        XCTAssertEqual(fired.filter { $0["fet"] != nil }.count, 1)
        XCTAssertEqual(fired.filter { $0["met"] != nil }.count, 1)
    }

    func testCursorsIncreaseInCommitOrder() throws {
        _ = try store.createZone(dev, zoneName: zone)
        try subscribe(querySubscription("games", type: "Game", zone: zone))
        var expected: [String] = []
        for index in 0..<30 {
            let name = newName("Game")
            expected.append(name)
            try create(zone, name, "Game", ["name": stringField("g\(index)")])
        }
        let all = try store.notifications(databaseID: databaseID, after: cursor, limit: 1000)
        XCTAssertEqual(all.count, 30)
        XCTAssertEqual(all.map(\.id), all.map(\.id).sorted())
        XCTAssertEqual(Set(all.map(\.id)).count, 30)
        let names = try all.map { try JSONValue.parse($0.payload)["ck"]?["qry"]?["rid"]?.stringValue ?? "" }
        XCTAssertEqual(names, expected, "commit order")
        // Paging with a limit resumes exactly where the previous page ended.
        var paged: [Int64] = []
        var position = cursor
        for _ in 0..<100 {
            let page = try store.notifications(databaseID: databaseID, after: position, limit: 7)
            guard let last = page.last else { break }
            paged += page.map(\.id)
            position = last.id
        }
        XCTAssertEqual(paged, all.map(\.id))
        let nids = try all.map { try JSONValue.parse($0.payload)["ck"]?["nid"]?.stringValue ?? "" }
        XCTAssertEqual(Set(nids).count, 30, "nid is unique")
    }

    func testNotificationsSurviveReopeningTheStore() throws {
        _ = try store.createZone(dev, zoneName: zone)
        try subscribe(querySubscription("games", type: "Game", zone: zone))
        let start = cursor
        let game = newName("Game")
        try create(zone, game, "Game")
        store.close()
        store = try reopenedStore()
        cursor = start
        assertQuery(try singleNotification("after reopening"), sid: "games", rid: game, fo: 1, zone: zone)
        XCTAssertEqual(try subscriptionIDs(), ["games"], "subscriptions are durable")
        let later = newName("Game")
        try create(zone, later, "Game")
        assertQuery(try singleNotification("the reopened store still matches"), sid: "games", rid: later, fo: 1, zone: zone)
    }

    func testAnotherUserNeitherSeesNorReceivesTheNotifications() throws {
        let bob = try store.createUser(name: "bob").user
        let bobScope = DatabaseScope(user: bob, container: Self.container, environment: .development)
        let bobChannel = try store.createPushToken(bobScope, apnsEnvironment: "development")
        XCTAssertNotEqual(bobChannel.databaseID, databaseID)
        let aliceChannel = try store.createPushToken(dev, apnsEnvironment: "development")

        _ = try store.createZone(dev, zoneName: zone)
        try subscribe(databaseSubscription("db"), querySubscription("games", type: "Game", zone: zone))
        _ = try store.createZone(bobScope, zoneName: zone)
        try subscribe(databaseSubscription("bob-db"), scope: bobScope)
        let bobStart = try store.notifications(databaseID: bobChannel.databaseID, after: bobChannel.startCursor, limit: 100)
        for _ in 0..<5 { try create(zone, newName("Game"), "Game") }
        XCTAssertEqual(try newNotifications().count, 10)
        XCTAssertEqual(try store.notifications(databaseID: bobChannel.databaseID, after: bobChannel.startCursor, limit: 100).count,
                       bobStart.count, "Alice's writes never reach Bob's outbox")

        XCTAssertThrowsError(try store.pushToken(bobScope, token: aliceChannel.token)) { error in
            XCTAssertEqual((error as? ServerError)?.code, .accessDenied)
        }
        XCTAssertThrowsError(try store.pushToken(dev, token: bobChannel.token)) { error in
            XCTAssertEqual((error as? ServerError)?.code, .accessDenied)
        }
        let otherContainer = DatabaseScope(user: user, container: "iCloud.other", environment: .development)
        XCTAssertThrowsError(try store.pushToken(otherContainer, token: aliceChannel.token), "a token is bound to its container") { error in
            XCTAssertEqual((error as? ServerError)?.code, .accessDenied)
        }
        XCTAssertThrowsError(try store.pushToken(dev, token: "no-such-token")) { error in
            XCTAssertEqual((error as? ServerError)?.code, .notFound)
        }
        XCTAssertEqual(try store.pushToken(dev, token: aliceChannel.token).databaseID, databaseID)
        XCTAssertEqual(try subscriptionIDs(bobScope), ["bob-db"], "subscriptions are per user")
    }

    /// A new token starts at the newest notification: it does not replay the past.
    func testANewTokenStartsAfterExistingNotifications() throws {
        _ = try store.createZone(dev, zoneName: zone)
        try subscribe(querySubscription("games", type: "Game", zone: zone))
        try create(zone, newName("Game"), "Game")
        let late = try store.createPushToken(dev, apnsEnvironment: "development")
        XCTAssertEqual(try store.notifications(databaseID: databaseID, after: late.startCursor, limit: 10).count, 0)
        try create(zone, newName("Game"), "Game")
        XCTAssertEqual(try store.notifications(databaseID: databaseID, after: late.startCursor, limit: 10).count, 1)
    }

    /// Purging old notifications never lets a cursor be reused: a client holding an old cursor
    /// still sees every later notification.
    func testPurgingKeepsRecentNotificationsAndNeverReusesCursors() throws {
        _ = try store.createZone(dev, zoneName: zone)
        try subscribe(querySubscription("games", type: "Game", zone: zone))
        for _ in 0..<3 { try create(zone, newName("Game"), "Game") }
        let old = try newNotifications()
        XCTAssertEqual(old.count, 3)
        let heldCursor = cursor

        XCTAssertEqual(try store.purgeNotifications(olderThanMilliseconds: 86_400_000), 0, "nothing is a day old yet")
        advanceClock(milliseconds: 2 * 86_400_000)
        XCTAssertEqual(try store.purgeNotifications(olderThanMilliseconds: 86_400_000), 3)
        XCTAssertEqual(try store.notifications(databaseID: databaseID, after: 0, limit: 10).count, 0, "the outbox is empty")

        let game = newName("Game")
        try create(zone, game, "Game")
        cursor = heldCursor
        assertQuery(try singleNotification("a notification after the purge"), sid: "games", rid: game, fo: 1, zone: zone)
        XCTAssertGreaterThan(cursor, heldCursor)
        store.close()
        store = try reopenedStore()
        try create(zone, newName("Game"), "Game")
        let afterReopen = try store.notifications(databaseID: databaseID, after: cursor, limit: 10)
        XCTAssertEqual(afterReopen.count, 1, "ids keep increasing across a reopen after the outbox was emptied")
    }
}
