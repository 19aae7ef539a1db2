import Foundation
import RecordModel
import RecordStore
import XCTest

/// Which subscription fires, and with what payload, for each kind of change,
/// checked against the store's outbox with no HTTP in between.
final class SubscriptionMatchingTests: SubscriptionStoreTestCase {
    let zoneA = "ZoneA"
    let zoneB = "ZoneB"

    override func setUpWithError() throws {
        try super.setUpWithError()
        _ = try store.createZone(dev, zoneName: zoneA)
        _ = try store.createZone(dev, zoneName: zoneB)
        try assertNoNotification("no subscription yet")
    }

    func testQuerySubscriptionFiresOnEachTriggerWithItsCodeAndExactlyTheDesiredKeys() throws {
        try subscribe(querySubscription("games", type: "Game", zone: zoneA, desiredKeys: ["name", "missing"]))
        let game = newName("Game")

        try create(zoneA, game, "Game", ["name": stringField("Catan"), "lowScoreWins": intField(0), "notes": stringField("x")])
        assertQuery(try singleNotification("create"), sid: "games", rid: game, fo: 1, zone: zoneA, af: ["name": "Catan"])

        try update(zoneA, game, "Game", ["lowScoreWins": intField(1)])
        assertQuery(try singleNotification("update of another field"), sid: "games", rid: game, fo: 2, zone: zoneA,
                    af: ["name": "Catan"])

        try update(zoneA, game, "Game", ["name": stringField("Carcassonne")])
        assertQuery(try singleNotification("update of a desired key"), sid: "games", rid: game, fo: 2, zone: zoneA,
                    af: ["name": "Carcassonne"])

        try delete(zoneA, game)
        let qry = assertQuery(try singleNotification("delete"), sid: "games", rid: game, fo: 3, zone: zoneA)
        XCTAssertNil(qry?["af"]?["name"], "a deletion carries no field values")
    }

    func testNoDesiredKeysMeansEmptyFieldSet() throws {
        try subscribe(querySubscription("games", type: "Game", zone: zoneA))
        let game = newName("Game")
        try create(zoneA, game, "Game", ["name": stringField("Catan")])
        assertQuery(try singleNotification("create"), sid: "games", rid: game, fo: 1, zone: zoneA, af: [:])
    }

    func testFiresOnCreateOnlyIgnoresUpdatesAndDeletions() throws {
        try subscribe(querySubscription("created", type: "Game", zone: zoneA, firesOn: ["create"]))
        let game = newName("Game")
        try create(zoneA, game, "Game", ["name": stringField("Catan")])
        assertQuery(try singleNotification("create"), sid: "created", rid: game, fo: 1, zone: zoneA, af: [:])
        try update(zoneA, game, "Game", ["name": stringField("Chess")])
        try assertNoNotification("update with firesOn [create]")
        try delete(zoneA, game)
        try assertNoNotification("delete with firesOn [create]")
    }

    func testFiresOnSubsetsEachFireOnlyOnTheirTriggers() throws {
        try subscribe(querySubscription("updated", type: "Game", zone: zoneA, firesOn: ["update"]),
                      querySubscription("deleted", type: "Game", zone: zoneA, firesOn: ["delete"]),
                      querySubscription("created-or-deleted", type: "Game", zone: zoneA, firesOn: ["create", "delete"]))
        let game = newName("Game")

        try create(zoneA, game, "Game", ["name": stringField("Catan")])
        assertQuery(try singleNotification("create"), sid: "created-or-deleted", rid: game, fo: 1, zone: zoneA)

        try update(zoneA, game, "Game", ["name": stringField("Chess")])
        assertQuery(try singleNotification("update"), sid: "updated", rid: game, fo: 2, zone: zoneA)

        try delete(zoneA, game)
        let deletions = try newNotifications()
        XCTAssertEqual(Set(deletions.compactMap { $0["qry"]?["sid"]?.stringValue }), ["deleted", "created-or-deleted"])
        XCTAssertEqual(deletions.count, 2)
        for ck in deletions { assertQuery(ck, sid: ck["qry"]?["sid"]?.stringValue ?? "", rid: game, fo: 3, zone: zoneA) }
    }

    /// forceUpdate and forceReplace of a missing record create it: that is a creation (fo 1).
    func testForcedSaveOfAMissingRecordIsACreation() throws {
        try subscribe(querySubscription("games", type: "Game", zone: zoneA, firesOn: ["create"]))
        let first = newName("Game"), second = newName("Game")
        try modify(zoneA, [(.forceUpdate, wireRecord(first, "Game", ["name": stringField("A")]))])
        assertQuery(try singleNotification("forceUpdate creating"), sid: "games", rid: first, fo: 1, zone: zoneA)
        try modify(zoneA, [(.forceReplace, wireRecord(second, "Game", ["name": stringField("B")]))])
        assertQuery(try singleNotification("forceReplace creating"), sid: "games", rid: second, fo: 1, zone: zoneA)
    }

    func testFilterByEqualsIsHonouredOnEveryTrigger() throws {
        try subscribe(querySubscription("catan", type: "Game", zone: zoneA, filterBy: [equalsFilter("name", "Catan")],
                                        desiredKeys: ["name"]))
        let catan = newName("Game"), chess = newName("Game")

        try create(zoneA, chess, "Game", ["name": stringField("Chess")])
        try assertNoNotification("creation not matching the filter")
        try create(zoneA, catan, "Game", ["name": stringField("Catan")])
        assertQuery(try singleNotification("matching creation"), sid: "catan", rid: catan, fo: 1, zone: zoneA, af: ["name": "Catan"])

        try update(zoneA, chess, "Game", ["lowScoreWins": intField(1)])
        try assertNoNotification("update not matching the filter")
        try update(zoneA, catan, "Game", ["lowScoreWins": intField(1)])
        assertQuery(try singleNotification("matching update"), sid: "catan", rid: catan, fo: 2, zone: zoneA, af: ["name": "Catan"])

        try delete(zoneA, chess)
        try assertNoNotification("deletion of a record not matching the filter")
        try delete(zoneA, catan)
        assertQuery(try singleNotification("deletion of a matching record (its last state matched)"),
                    sid: "catan", rid: catan, fo: 3, zone: zoneA)
    }

    func testFilterOnAReferenceField() throws {
        try subscribe(querySubscription("scores-of-p1", type: "Score", zone: zoneA, filterBy: [
            ["comparator": "EQUALS", "fieldName": "player", "fieldValue": ["value": ["recordName": "Player|~|P1"]]],
        ], desiredKeys: ["value"]))
        try create(zoneA, "Player|~|P1", "Player", ["seat": intField(1)])
        try create(zoneA, "Player|~|P2", "Player", ["seat": intField(2)])
        try assertNoNotification("players do not match a Score subscription")
        let mine = newName("Score"), theirs = newName("Score")
        try create(zoneA, theirs, "Score", ["player": deleteSelfReference("Player|~|P2"), "value": doubleField(3)])
        try assertNoNotification("a score of another player")
        try create(zoneA, mine, "Score", ["player": deleteSelfReference("Player|~|P1"), "value": doubleField(7)])
        assertQuery(try singleNotification("a score of P1"), sid: "scores-of-p1", rid: mine, fo: 1, zone: zoneA, af: ["value": 7.0])
    }

    func testOtherRecordTypesAndOtherZonesDoNotFire() throws {
        try subscribe(querySubscription("games-in-a", type: "Game", zone: zoneA))
        try create(zoneB, newName("Game"), "Game", ["name": stringField("in B")])
        try assertNoNotification("a Game in another zone")
        try create(ZoneID.defaultZoneName, newName("Game"), "Game", ["name": stringField("in the default zone")])
        try assertNoNotification("a Game in the default zone")
        try create(zoneA, newName("Match"), "Match", ["notes": stringField("not a game")])
        try assertNoNotification("another record type in the zone")
        try create(zoneA, newName("GameX"), "GameX", ["name": stringField("a type whose name starts with Game")])
        try assertNoNotification("a type that only shares a prefix")
        let game = newName("Game")
        try create(zoneA, game, "Game", ["name": stringField("in A")])
        assertQuery(try singleNotification("the matching type and zone"), sid: "games-in-a", rid: game, fo: 1, zone: zoneA)
    }

    func testZoneSubscriptionFiresFetForItsZoneOnlyOncePerCommit() throws {
        try subscribe(zoneSubscription("zone-a", zone: zoneA))
        try create(zoneB, newName("Game"), "Game")
        try create(ZoneID.defaultZoneName, newName("Game"), "Game")
        try assertNoNotification("changes in other zones")

        try modify(zoneA, (0..<3).map { _ in (.create, wireRecord(newName("Game"), "Game")) })
        let ck = try singleNotification("one batch of three changes in the zone")
        XCTAssertEqual(ck["cid"], .string(Self.container))
        XCTAssertNil(ck["qry"])
        XCTAssertNil(ck["met"])
        XCTAssertEqual(ck["fet"]?["zid"], .string(zoneA))
        XCTAssertEqual(ck["fet"]?["zoid"], .string(user.recordName))
        XCTAssertEqual(ck["fet"]?["dbs"]?.int64Value, 2)
        XCTAssertEqual(ck["fet"]?["sid"], .string("zone-a"))

        let game = newName("Game")
        try create(zoneA, game, "Game")
        XCTAssertEqual(try singleNotification("another creation")["fet"]?["sid"], .string("zone-a"))
        try delete(zoneA, game)
        XCTAssertEqual(try singleNotification("delete")["fet"]?["sid"], .string("zone-a"))
    }

    func testDatabaseSubscriptionFiresMetForAnyZoneAndForZoneCreationAndDeletion() throws {
        try subscribe(databaseSubscription("everything"))
        for zone in [zoneA, zoneB, ZoneID.defaultZoneName] {
            try create(zone, newName("Game"), "Game")
            let ck = try singleNotification("a change in \(zone)")
            XCTAssertEqual(ck["met"]?["sid"], .string("everything"))
            XCTAssertEqual(ck["met"]?["dbs"]?.int64Value, 2)
            XCTAssertNil(ck["qry"])
            XCTAssertNil(ck["fet"])
        }
        _ = try store.createZone(dev, zoneName: "ZoneC")
        XCTAssertEqual(try singleNotification("zone creation")["met"]?["sid"], .string("everything"))
        try create("ZoneC", newName("Game"), "Game")
        XCTAssertEqual(try singleNotification("change in the new zone")["met"]?["sid"], .string("everything"))
        try store.deleteZone(dev, zoneName: "ZoneC")
        XCTAssertEqual(try singleNotification("zone deletion")["met"]?["sid"], .string("everything"))
        try store.deleteZone(dev, zoneName: zoneB)  // a zone with one record
        XCTAssertEqual(try singleNotification("deletion of a zone with records")["met"]?["sid"], .string("everything"))
    }

    func testChangesThatChangeNothingNotifyNobody() throws {
        try subscribe(databaseSubscription("everything"), zoneSubscription("zone-a", zone: zoneA),
                      querySubscription("games", type: "Game", zone: zoneA))
        _ = try store.createZone(dev, zoneName: zoneA)
        try assertNoNotification("creating a zone that already exists")
        let results = try modify(zoneA, [(.forceDelete, ["recordName": .string(newName("Game"))])])
        guard case .deleted = results.first else { return XCTFail("forceDelete of a missing record succeeds: \(results)") }
        try assertNoNotification("forceDelete of a record that does not exist")
        _ = try store.createPushToken(dev, apnsEnvironment: "development")
        try subscribe(querySubscription("more", type: "Match", zone: zoneA))
        _ = try store.modifySubscriptions(dev, operations: [.delete(subscriptionID: "more")])
        try assertNoNotification("tokens and subscriptions are not record changes")
        _ = try store.lookupRecords(dev, zone: ZoneID(zoneName: zoneA), recordNames: ["nothing"])
        _ = try store.zoneChanges(dev, zone: ZoneID(zoneName: zoneA), syncToken: nil, resultsLimit: 10, recordTypes: nil)
        try assertNoNotification("reads")
    }

    func testFiresOnceRemovesTheQuerySubscriptionAfterItsFirstFiring() throws {
        try subscribe(querySubscription("once", type: "Game", zone: zoneA, firesOnce: true),
                      querySubscription("always", type: "Game", zone: zoneA, firesOn: ["create"]))
        let names = (0..<3).map { _ in newName("Game") }
        try modify(zoneA, names.map { (.create, wireRecord($0, "Game")) })
        let fired = try newNotifications()
        XCTAssertEqual(fired.filter { $0["qry"]?["sid"] == "once" }.count, 1, "firesOnce fires once even for a batch of three")
        XCTAssertEqual(fired.filter { $0["qry"]?["sid"] == "always" }.count, 3)
        XCTAssertEqual(try subscriptionIDs(), ["always"], "the firesOnce subscription is gone")
        try create(zoneA, newName("Game"), "Game")
        XCTAssertEqual(try newNotifications().map { $0["qry"]?["sid"] }, ["always"])
    }

    func testFiresOnceDoesNotFireOrVanishForChangesItDoesNotMatch() throws {
        try subscribe(querySubscription("once", type: "Game", zone: zoneA, firesOn: ["delete"], firesOnce: true))
        let game = newName("Game")
        try create(zoneA, game, "Game")
        try update(zoneA, game, "Game", ["name": stringField("x")])
        try create(zoneB, newName("Game"), "Game")
        try assertNoNotification("nothing it fires on")
        XCTAssertEqual(try subscriptionIDs(), ["once"], "still there until it fires")
        try delete(zoneA, game)
        assertQuery(try singleNotification("the first deletion"), sid: "once", rid: game, fo: 3, zone: zoneA)
        XCTAssertEqual(try subscriptionIDs(), [])
    }

    func testFiresOnceZoneAndDatabaseSubscriptions() throws {
        var database = databaseSubscription("db-once")
        if case .object(var members) = database { members["firesOnce"] = true; database = .object(members) }
        try subscribe(zoneSubscription("zone-once", zone: zoneA, firesOnce: true), database)
        try create(zoneA, newName("Game"), "Game")
        let first = try newNotifications()
        XCTAssertEqual(Set(first.compactMap { $0["fet"]?["sid"]?.stringValue ?? $0["met"]?["sid"]?.stringValue }), ["zone-once", "db-once"])
        XCTAssertEqual(first.count, 2)
        XCTAssertEqual(try subscriptionIDs(), [])
        try create(zoneA, newName("Game"), "Game")
        try assertNoNotification("after both fired once")
    }

    /// At most 1,000 subscriptions a database; at the cap a new one is LIMIT_EXCEEDED, but saving
    /// an existing one again (an update) still works.
    func testTheSubscriptionCapCountsOnlyNewSubscriptions() throws {
        for start in stride(from: 0, to: StoreLimits.maximumSubscriptions, by: 400) {
            let ids = start..<min(start + 400, StoreLimits.maximumSubscriptions)
            let operations = try ids.map { SubscriptionOperation.save(try Subscription(json: databaseSubscription("db-\($0)"))) }
            XCTAssertTrue(try store.modifySubscriptions(dev, operations: operations).allSatisfy { (try? $0.get()) != nil })
        }
        let extra = try store.modifySubscriptions(dev, operations: [.save(try Subscription(json: databaseSubscription("one-too-many")))])
        guard case .failure(let error)? = extra.first else { return XCTFail("the 1,001st subscription was accepted") }
        XCTAssertEqual(error.code, .limitExceeded)
        try subscribe(zoneSubscription("db-7", zone: ZoneID.defaultZoneName))
        XCTAssertEqual(try subscriptionIDs().count, StoreLimits.maximumSubscriptions)
    }

    func testUpdatingASubscriptionReplacesItsMatching() throws {
        try subscribe(querySubscription("s", type: "Game", zone: zoneA, firesOn: ["create"]))
        try subscribe(querySubscription("s", type: "Match", zone: zoneA, firesOn: ["create"]))
        XCTAssertEqual(try subscriptionIDs(), ["s"])
        try create(zoneA, newName("Game"), "Game")
        try assertNoNotification("the subscription now watches Match")
        let match = newName("Match")
        try create(zoneA, match, "Match")
        assertQuery(try singleNotification("Match created"), sid: "s", rid: match, fo: 1, zone: zoneA)
        _ = try store.modifySubscriptions(dev, operations: [.delete(subscriptionID: "s")])
        try create(zoneA, newName("Match"), "Match")
        try assertNoNotification("after deleting the subscription")
    }

    /// Each operation of a batch sees the ones before it (a delete finds an earlier save, a second
    /// delete finds nothing), and the batch keeps its net effect: the last save of an id wins.
    func testABatchAppliesItsOperationsInOrderAndKeepsTheLastSave() throws {
        try subscribe(zoneSubscription("kept", zone: zoneA))
        let results = try store.modifySubscriptions(dev, operations: [
            .save(try Subscription(json: zoneSubscription("gone", zone: zoneA))),
            .delete(subscriptionID: "gone"),
            .delete(subscriptionID: "gone"),
            .save(try Subscription(json: querySubscription("s", type: "Game", zone: zoneA, firesOn: ["create"]))),
            .save(try Subscription(json: querySubscription("s", type: "Match", zone: zoneA, firesOn: ["create"]))),
            .delete(subscriptionID: "kept"),
            .save(try Subscription(json: querySubscription("kept", type: "Match", zone: zoneA, firesOn: ["create"]))),
        ])
        XCTAssertEqual(results.map { result -> Bool in
            if case .success = result { return true }
            return false
        }, [true, true, false, true, true, true, true])
        if case .failure(let error) = results[2] { XCTAssertEqual(error.code, .notFound) }
        XCTAssertEqual(try subscriptionIDs(), ["kept", "s"])
        try create(zoneA, newName("Game"), "Game")
        try assertNoNotification("both subscriptions now watch Match only")
        try create(zoneA, newName("Match"), "Match")
        let fired = try newNotifications()
        XCTAssertEqual(fired.compactMap { $0["qry"]?["sid"]?.stringValue }.sorted(), ["kept", "s"], "\(fired)")
    }

    func testSubscriptionOperationErrors() throws {
        let results = try store.modifySubscriptions(dev, operations: [
            .save(try Subscription(json: querySubscription("nozone", type: "Game", zone: "NoSuchZone"))),
            .delete(subscriptionID: "never-made"),
            .save(try Subscription(json: zoneSubscription("ok", zone: zoneA))),
        ])
        guard results.count == 3 else { return XCTFail("one result per operation: \(results)") }
        if case .failure(let error) = results[0] { XCTAssertEqual(error.code, .zoneNotFound) } else { XCTFail("\(results[0])") }
        if case .failure(let error) = results[1] { XCTAssertEqual(error.code, .notFound) } else { XCTFail("\(results[1])") }
        if case .success(let saved) = results[2] { XCTAssertEqual(saved?.subscriptionID, "ok") } else { XCTFail("\(results[2])") }
        XCTAssertThrowsError(try Subscription(json: ["subscriptionID": "x", "subscriptionType": "query"]))
        XCTAssertThrowsError(try Subscription(json: ["subscriptionID": "x", "subscriptionType": "nope"]))
        XCTAssertThrowsError(try Subscription(json: querySubscription("x", type: "Game", firesOn: [])))
        XCTAssertThrowsError(try Subscription(json: querySubscription("x", type: "Game", firesOn: ["save"])))
    }
}
