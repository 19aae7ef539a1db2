import RecordModel
import RecordStore
import XCTest

/// Store behaviour the contract asks for that the store does not have yet. These tests fail until
/// the bug is fixed; the same bug over HTTP is in Tests/IntegrationTests/DaemonKnownBugs.swift.
final class StoreKnownBugs: StoreTestCase {
    /// The first read of a database that does not exist yet (a new user, container or environment)
    /// creates it with its `_defaultZone` through the writer, but then looks the zone up in the
    /// read transaction it had already started, whose snapshot predates the zone: ZONE_NOT_FOUND.
    /// Expected: an empty zone — the default zone always exists (CONTRACT §3.2).
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
