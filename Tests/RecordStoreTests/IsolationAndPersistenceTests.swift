import RecordModel
import PostgresRecordStore
import RecordStore
import XCTest

/// One user never sees another's data; everything survives reopening the store.
final class IsolationAndPersistenceTests: StoreTestCase {
    func testOneUserNeverSeesAnothersZonesRecordsOrChanges() throws {
        let zone = ZoneID(zoneName: "ScorebookData")
        _ = try store.createZone(dev, zoneName: "ScorebookData")
        _ = try store.createZone(dev, zoneName: "AliceOnly")
        try save(dev, zone: zone, record("secret", "Diary", ["text": field("alice's", "STRING")]))
        try save(dev, record("secret-default", "Diary"))

        let bob = try store.createUser(name: "bob").user
        XCTAssertNotEqual(bob.recordName, alice.recordName)
        let bobDev = try scope(bob, .development)

        XCTAssertEqual(try store.listZones(bobDev).map(\.zoneID.zoneName), [ZoneID.defaultZoneName])
        assertThrows(.zoneNotFound) { try store.lookupZone(bobDev, zoneName: "AliceOnly") }
        assertThrows(.zoneNotFound) { try store.lookupRecords(bobDev, zone: zone, recordNames: ["secret"]) }
        XCTAssertNil(try lookup(bobDev, "secret-default"), "not even in the default zone")
        XCTAssertTrue(try fetchChanges(bobDev).state.isEmpty)
        XCTAssertTrue(try store.databaseChanges(bobDev, syncToken: nil, resultsLimit: 400).zones
            .allSatisfy { $0.zoneID.zoneName == ZoneID.defaultZoneName })
        XCTAssertTrue(try store.queryRecords(bobDev, zone: .default, query: try RecordQuery(json: ["recordType": "Diary"]),
                                             resultsLimit: 200, continuationMarker: nil).records.isEmpty)

        // Bob's writes under the same names land in his own database and leave Alice's alone.
        _ = try store.createZone(bobDev, zoneName: "ScorebookData")
        try save(bobDev, zone: zone, record("secret", "Diary", ["text": field("bob's", "STRING")]))
        try modify(bobDev, [(.forceDelete, record("secret-default"))])
        try store.deleteZone(bobDev, zoneName: "ScorebookData")
        XCTAssertEqual(try fields(of: try lookup(dev, zone: zone, "secret"))["text"], .string("alice's"))
        XCTAssertNotNil(try lookup(dev, "secret-default"))
        XCTAssertTrue(try store.listZones(dev).contains { $0.zoneID.zoneName == "ScorebookData" })
        XCTAssertEqual(try lookup(dev, zone: zone, "secret")?.zoneID.ownerRecordName, alice.recordName)
    }

    func testTokensAuthenticateTheirOwnUserOnly() throws {
        let (bob, bobToken) = try store.createUser(name: "bob")
        XCTAssertEqual(try store.authenticate(bearerToken: bobToken)?.recordName, bob.recordName)
        XCTAssertNil(try store.authenticate(bearerToken: bobToken + "x"))
        XCTAssertNil(try store.authenticate(bearerToken: ""))
        assertThrows(.exists) { try store.createUser(name: "bob") }
        let second = try store.issueToken(userName: "bob")
        XCTAssertNotEqual(second.token, bobToken)
        XCTAssertEqual(try store.authenticate(bearerToken: second.token)?.id, bob.id)
        XCTAssertEqual(try store.authenticate(bearerToken: bobToken)?.id, bob.id, "an earlier token stays valid")
        assertThrows(.notFound) { try store.issueToken(userName: "nobody") }

        let apiToken = try store.createAPIToken()
        XCTAssertEqual(apiToken.count, 64)
        XCTAssertEqual(try store.authenticate(apiToken: apiToken, webAuthToken: bobToken)?.id, bob.id)
        XCTAssertNil(try store.authenticate(apiToken: String(repeating: "0", count: 64), webAuthToken: bobToken))
        XCTAssertNil(try store.authenticate(apiToken: apiToken, webAuthToken: "nope"))
        XCTAssertEqual(Set(try store.listUsers().map(\.name)), ["alice", "bob"])

        // Only hashes are stored: no token's text is anywhere in the database or its WAL (the
        // PostgreSQL schema stores the same hashes; its files are the server's, not checked here).
        guard Self.backend == .sqlite else { return }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("scorebook.sqlite") }
        XCTAssertFalse(files.isEmpty)
        for file in files {
            let bytes = try Data(contentsOf: directory.appendingPathComponent(file))
            for token in [bobToken, second.token, apiToken] {
                XCTAssertNil(bytes.range(of: Data(token.utf8)), "\(file) holds a token in clear")
            }
        }
    }

    func testReopeningTheStoreKeepsRecordsUsersAndEverySyncToken() throws {
        let zone = ZoneID(zoneName: "ScorebookData")
        _ = try store.createZone(dev, zoneName: "ScorebookData")
        let v1 = try save(dev, zone: zone, record("a", "Thing", ["n": field(1, "INT64")]))
        try save(dev, zone: zone, record("gone", "Thing"))
        try modify(dev, zone: zone, [(.forceDelete, record("gone"))])
        let zoneToken = try fetchChanges(dev, zone: zone).token
        let databaseToken = try store.databaseChanges(dev, syncToken: nil, resultsLimit: 400).syncToken
        let (_, bobToken) = try store.createUser(name: "bob")

        try reopenStore()

        let a = try XCTUnwrap(try lookup(dev, zone: zone, "a"))
        XCTAssertEqual(a.changeTag, v1.changeTag)
        XCTAssertNil(try lookup(dev, zone: zone, "gone"))
        XCTAssertNotNil(try store.authenticate(bearerToken: bobToken), "tokens survive")
        let resumed = try store.zoneChanges(dev, zone: zone, syncToken: zoneToken, resultsLimit: 400, recordTypes: nil)
        XCTAssertTrue(resumed.changes.isEmpty, "the old zone token is valid and up to date")
        XCTAssertTrue(try store.databaseChanges(dev, syncToken: databaseToken, resultsLimit: 400).zones.isEmpty)

        // Writing after reopening continues the same change log: the old token sees exactly the new change.
        let v2 = try save(dev, zone: zone, .update, record("a", "Thing", ["n": field(2, "INT64")], tag: a.changeTag))
        XCTAssertNotEqual(v2.changeTag, v1.changeTag, "tags keep changing after a reopen")
        let next = try fetchChanges(dev, zone: zone, from: zoneToken).state
        XCTAssertEqual(Array(next.keys), ["a"])
        XCTAssertEqual(next["a"]??.changeTag, v2.changeTag)
        XCTAssertEqual(try store.databaseChanges(dev, syncToken: databaseToken, resultsLimit: 400).zones.map(\.zoneID.zoneName),
                       ["ScorebookData"])
    }

    func testOpeningAStoreWhereAFileStandsFails() throws {
        if Self.backend == .postgres {
            // Nothing listens on port 1: opening fails (within its deadline) instead of hanging.
            XCTAssertThrowsError(try BlockingStore.run {
                try await PostgresRecordStore.open(url: "postgres://postgres@127.0.0.1:1/none", openDeadline: .seconds(3))
            })
            return
        }
        let file = directory.appendingPathComponent("not-a-directory")
        try Data("x".utf8).write(to: file)
        XCTAssertThrowsError(try makeRecordStorage(directory: file, clock: clock))
    }
}
