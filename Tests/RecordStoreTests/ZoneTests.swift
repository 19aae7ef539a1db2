import RecordModel
import RecordStore
import XCTest

/// Zones and the database change feed (`changes/database`).
final class ZoneTests: StoreTestCase {
    func testEveryDatabaseHasTheDefaultZoneAndCreatingAZoneListsIt() throws {
        XCTAssertEqual(try store.listZones(dev).map(\.zoneID.zoneName), [ZoneID.defaultZoneName])
        let created = try store.createZone(dev, zoneName: "ScorebookData")
        XCTAssertEqual(created.zoneID.zoneName, "ScorebookData")
        XCTAssertEqual(created.zoneID.ownerRecordName, alice.recordName)
        XCTAssertEqual(Set(try store.listZones(dev).map(\.zoneID.zoneName)), [ZoneID.defaultZoneName, "ScorebookData"])
        XCTAssertEqual(try store.lookupZone(dev, zoneName: "ScorebookData").zoneID.zoneName, "ScorebookData")
        assertThrows(.zoneNotFound) { try store.lookupZone(dev, zoneName: "Missing") }
    }

    func testCreatingAnExistingZoneSucceedsAndKeepsItsRecords() throws {
        let zone = ZoneID(zoneName: "Z")
        _ = try store.createZone(dev, zoneName: "Z")
        try save(dev, zone: zone, record("r", "Thing"))
        let again = try store.createZone(dev, zoneName: "Z")
        XCTAssertEqual(again.zoneID.zoneName, "Z")
        XCTAssertNotNil(try lookup(dev, zone: zone, "r"))
        XCTAssertEqual(try store.listZones(dev).filter { $0.zoneID.zoneName == "Z" }.count, 1)
    }

    func testInvalidZoneNamesAreBadRequestAndTheDefaultZoneCannotBeDeleted() throws {
        for name in ["", "_private", String(repeating: "z", count: 256), "bell\u{7}"] {
            assertThrows(.badRequest) { try store.createZone(dev, zoneName: name) }
        }
        assertThrows(.badRequest) { try store.deleteZone(dev, zoneName: ZoneID.defaultZoneName) }
        assertThrows(.zoneNotFound) { try store.deleteZone(dev, zoneName: "Missing") }
    }

    func testDeletingAZoneDeletesItsRecordsAndShowsInTheDatabaseFeed() throws {
        let zone = ZoneID(zoneName: "Doomed")
        _ = try store.createZone(dev, zoneName: "Doomed")
        _ = try store.createZone(dev, zoneName: "Stays")
        try save(dev, zone: zone, record("r1", "Thing"))
        try save(dev, zone: ZoneID(zoneName: "Stays"), record("r1", "Thing"))
        let first = try store.databaseChanges(dev, syncToken: nil, resultsLimit: 400)
        XCTAssertTrue(first.zones.contains { $0.zoneID.zoneName == "Doomed" && !$0.deleted })
        let zoneToken = try fetchChanges(dev, zone: zone).token

        try store.deleteZone(dev, zoneName: "Doomed")
        XCTAssertFalse(try store.listZones(dev).contains { $0.zoneID.zoneName == "Doomed" })
        assertThrows(.zoneNotFound) { try store.lookupRecords(dev, zone: zone, recordNames: ["r1"]) }
        XCTAssertNotNil(try lookup(dev, zone: ZoneID(zoneName: "Stays"), "r1"), "other zones keep their records")

        let changes = try store.databaseChanges(dev, syncToken: first.syncToken, resultsLimit: 400)
        XCTAssertEqual(changes.zones.map(\.zoneID.zoneName), ["Doomed"])
        XCTAssertEqual(changes.zones.first?.deleted, true)
        XCTAssertFalse(changes.moreComing)

        // A zone made again under the same name starts empty; a token of the old one is refused.
        _ = try store.createZone(dev, zoneName: "Doomed")
        XCTAssertNil(try lookup(dev, zone: zone, "r1"), "records of the deleted zone do not come back")
        let error = assertThrows(.changeTokenExpired) {
            try store.zoneChanges(dev, zone: zone, syncToken: zoneToken, resultsLimit: 10, recordTypes: nil)
        }
        XCTAssertNotNil(error)
        let recreated = try store.databaseChanges(dev, syncToken: changes.syncToken, resultsLimit: 400)
        XCTAssertEqual(recreated.zones.map(\.zoneID.zoneName), ["Doomed"])
        XCTAssertEqual(recreated.zones.first?.deleted, false)
    }

    func testTheDatabaseFeedReportsZonesWithChangedRecordsAndPages() throws {
        for index in 0..<5 { _ = try store.createZone(dev, zoneName: "Z\(index)") }
        let token = try store.databaseChanges(dev, syncToken: nil, resultsLimit: 400).syncToken
        XCTAssertTrue(try store.databaseChanges(dev, syncToken: token, resultsLimit: 400).zones.isEmpty, "nothing changed since")

        try save(dev, zone: ZoneID(zoneName: "Z3"), record("r", "Thing"))
        try save(dev, zone: ZoneID(zoneName: "Z1"), record("r", "Thing"))
        var seen: [String] = []
        var next = token
        for _ in 0..<10 {
            let page = try store.databaseChanges(dev, syncToken: next, resultsLimit: 1)
            XCTAssertLessThanOrEqual(page.zones.count, 1)
            seen += page.zones.map(\.zoneID.zoneName)
            next = page.syncToken
            if !page.moreComing { break }
        }
        XCTAssertEqual(seen, ["Z3", "Z1"], "zones whose records changed, in commit order, one per page")
        XCTAssertTrue(try store.databaseChanges(dev, syncToken: next, resultsLimit: 400).zones.isEmpty)
    }

    func testAGarbageOrForeignDatabaseTokenIsBadRequest() throws {
        assertThrows(.badRequest) { try store.databaseChanges(dev, syncToken: "garbage", resultsLimit: 10) }
        let zoneToken = try fetchChanges(dev).token
        assertThrows(.badRequest) { try store.databaseChanges(dev, syncToken: zoneToken, resultsLimit: 10) }
        let prodToken = try store.databaseChanges(prod, syncToken: nil, resultsLimit: 10).syncToken
        assertThrows(.badRequest) { try store.databaseChanges(dev, syncToken: prodToken, resultsLimit: 10) }
    }

    func testTheTokensOfZonesListAndZoneCreationResumeTheZonesFeed() throws {
        let created = try store.createZone(dev, zoneName: "Z")
        let zone = ZoneID(zoneName: "Z")
        try save(dev, zone: zone, record("a", "Thing"))
        let listed = try XCTUnwrap(try store.listZones(dev).first { $0.zoneID.zoneName == "Z" })
        try save(dev, zone: zone, record("b", "Thing"))
        XCTAssertEqual(Set(try fetchChanges(dev, zone: zone, from: created.syncToken).state.keys), ["a", "b"])
        XCTAssertEqual(Set(try fetchChanges(dev, zone: zone, from: listed.syncToken).state.keys), ["b"])
        XCTAssertEqual(Set(try fetchChanges(dev, zone: zone, from: try store.lookupZone(dev, zoneName: "Z").syncToken).state.keys), [])
    }

    /// The first read of a database that does not exist yet (a new user, container or environment)
    /// sees its `_defaultZone`, whichever operation it is (a regression test: it once answered
    /// ZONE_NOT_FOUND because the zone was created after the read's snapshot began).
    func testTheFirstReadOfANewDatabaseSeesItsDefaultZone() throws {
        let bob = try store.createUser(name: "bob").user
        let fresh = { (container: String) in DatabaseScope(user: bob, container: container, environment: .development) }

        XCTAssertNoThrow(try store.zoneChanges(fresh("c1"), zone: .default, syncToken: nil, resultsLimit: 10, recordTypes: nil),
                         "records/changes as the first request")
        XCTAssertNoThrow(try store.lookupRecords(fresh("c2"), zone: .default, recordNames: ["x"]), "records/lookup as the first request")
        XCTAssertNoThrow(try store.queryRecords(fresh("c3"), zone: .default, query: try RecordQuery(json: ["recordType": "Game"]),
                                                resultsLimit: 10, continuationMarker: nil), "records/query as the first request")
        XCTAssertNoThrow(try store.lookupZone(fresh("c4"), zoneName: ZoneID.defaultZoneName), "zones/lookup as the first request")
    }
}
