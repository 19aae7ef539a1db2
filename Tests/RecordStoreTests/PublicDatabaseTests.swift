import Foundation
import RecordModel
import RecordStore
import XCTest

/// The public database at the store: one per container and environment, shared
/// by all users, `_defaultZone` only; creators (or a server-to-server key) change their records;
/// change feeds and subscriptions work on it. Runs on both backends like the rest of the suite.
final class PublicDatabaseTests: StoreTestCase {
    var bob: User!

    override func setUpWithError() throws {
        try super.setUpWithError()
        bob = try store.createUser(name: "bob").user
    }

    func publicScope(_ user: User?, _ environment: Environment = .development, container: String = StoreTestCase.container,
                     serverKey: Bool = false) -> DatabaseScope
    {
        .publicDatabase(caller: user, container: container, environment: environment, isServerKey: serverKey)
    }

    func game(_ name: String, _ title: String) -> JSONValue {
        record(name, "CatalogGame", ["name": field(.string(title)), "lowScoreWins": field(.int(0))])
    }

    func testEveryUserAndAnAPITokenReaderSeeOneSharedDatabase() throws {
        let saved = try save(publicScope(alice), game("catan", "Catan"))
        XCTAssertEqual(saved.created.userRecordName, alice.recordName)
        XCTAssertEqual(saved.zoneID.ownerRecordName, DatabaseScope.publicOwnerRecordName)
        for reader in [publicScope(bob), publicScope(nil)] {
            XCTAssertEqual(try fields(of: lookup(reader, "catan"))["name"], .string("Catan"))
            let page = try store.queryRecords(reader, zone: .default, query: RecordQuery(json: ["recordType": "CatalogGame"]),
                                              resultsLimit: 10, continuationMarker: nil)
            XCTAssertEqual(page.records.map(\.recordName), ["catan"])
        }
        // Not in anyone's private database, nor in another container's or environment's public one.
        XCTAssertNil(try lookup(dev, "catan"))
        XCTAssertNil(try lookup(publicScope(bob, container: "iCloud.other"), "catan"))
        XCTAssertNil(try lookup(publicScope(bob, .production), "catan"))
    }

    func testOnlyTheCreatorOrAServerKeyChangesARecord() throws {
        let saved = try save(publicScope(alice), game("catan", "Catan"))
        for operation in [RecordOperationType.update, .replace, .delete] {
            assertThrows(.accessDenied) {
                try modify(publicScope(bob), [(operation, game("catan", "Mine now").withTag(saved.changeTag))])
            }
        }
        for operation in [RecordOperationType.forceUpdate, .forceReplace, .forceDelete] {
            assertThrows(.accessDenied) { try modify(publicScope(bob), [(operation, game("catan", "Mine now"))]) }
        }
        // Even in a non-atomic batch the refusal fails the whole request: bob's own record is not created.
        assertThrows(.accessDenied) {
            try modify(publicScope(bob), atomic: false, [(.create, game("bobs", "Bob's")), (.forceDelete, record("catan"))])
        }
        XCTAssertNil(try lookup(publicScope(bob), "bobs"))
        XCTAssertEqual(try fields(of: lookup(publicScope(bob), "catan"))["name"], .string("Catan"))

        let updated = try save(publicScope(alice), .update, game("catan", "Catan (5th)").withTag(saved.changeTag))
        XCTAssertEqual(try fields(of: updated)["name"], .string("Catan (5th)"))
        let keyUser = try store.createUser(name: "key-user").user
        let byKey = try save(publicScope(keyUser, serverKey: true), .forceUpdate, game("catan", "Curated"))
        XCTAssertEqual(byKey.created.userRecordName, alice.recordName, "the creator stays the creator")
        XCTAssertEqual(byKey.modified.userRecordName, keyUser.recordName)
        // A user's own record; another user's is not touched by a failed attempt.
        try save(publicScope(bob), game("bobs", "Bob's"))
        XCTAssertEqual(try modify(publicScope(bob), [(.forceDelete, record("bobs"))]).count, 1)
        XCTAssertNil(try lookup(publicScope(alice), "bobs"))
        XCTAssertEqual(try modify(publicScope(keyUser, serverKey: true), [(.forceDelete, record("catan"))]).count, 1)
        XCTAssertNil(try lookup(publicScope(alice), "catan"))
    }

    func testAnAPITokenReaderCannotWriteOrSubscribe() throws {
        assertThrows(.authenticationRequired) { try modify(publicScope(nil), [(.create, game("x", "X"))]) }
        assertThrows(.authenticationRequired) {
            try store.modifySubscriptions(publicScope(nil), operations: [.save(Subscription(subscriptionID: "s", kind: .zone, zoneID: .default))])
        }
    }

    func testOnlyTheDefaultZone() throws {
        assertThrows(.badRequest) { try store.createZone(publicScope(alice), zoneName: "Catalog") }
        assertThrows(.badRequest) { try store.deleteZone(publicScope(alice), zoneName: ZoneID.defaultZoneName) }
        let zones = try store.listZones(publicScope(nil))
        XCTAssertEqual(zones.map(\.zoneID.zoneName), [ZoneID.defaultZoneName])
        XCTAssertEqual(zones.first?.zoneID.ownerRecordName, DatabaseScope.publicOwnerRecordName)
    }

    func testChangeFeedOnThePublicDefaultZone() throws {
        try save(publicScope(alice), game("catan", "Catan"))
        let first = try fetchChanges(publicScope(nil))
        XCTAssertEqual(Set(first.state.keys), ["catan"])
        try save(publicScope(bob), game("azul", "Azul"))
        try modify(publicScope(alice), [(.forceDelete, record("catan"))])
        let next = try fetchChanges(publicScope(bob), from: first.token)
        XCTAssertEqual(Set(next.state.keys), ["azul", "catan"])
        XCTAssertNil(next.state["catan"]!, "a deletion arrives as a tombstone")
    }

    func testSubscriptionsBelongToTheirUserAndDeliverToTheirChannels() throws {
        let bobChannel = try store.createPushToken(try scope(bob, .development), apnsEnvironment: "development")
        let aliceChannel = try store.createPushToken(dev, apnsEnvironment: "development")
        let query = Subscription(subscriptionID: "catalog", kind: .query, zoneID: .default, query: ["recordType": "CatalogGame"],
                                 desiredKeys: ["name"])
        let saved = try store.modifySubscriptions(publicScope(bob), operations: [.save(query)])
        XCTAssertEqual(try saved.first?.get()?.subscriptionID, "catalog")
        // Alice may use the same ID for her own, and sees only hers.
        _ = try store.modifySubscriptions(publicScope(alice), operations: [.save(Subscription(subscriptionID: "catalog", kind: .zone, zoneID: .default))])
        XCTAssertEqual(try store.listSubscriptions(publicScope(bob)).map(\.kind), [.query])
        XCTAssertEqual(try store.listSubscriptions(publicScope(alice)).map(\.kind), [.zone])
        XCTAssertTrue(try store.listSubscriptions(try scope(bob, .development)).isEmpty, "not in bob's private database")

        try save(publicScope(alice), game("catan", "Catan"))
        let toBob = try store.notifications(databaseID: bobChannel.databaseID, after: bobChannel.startCursor, limit: 10)
        XCTAssertEqual(toBob.count, 1)
        let qry = try XCTUnwrap(try JSONValue.parse(toBob[0].payload)["ck"]?["qry"])
        XCTAssertEqual(qry["rid"]?.stringValue, "catan")
        XCTAssertEqual(qry["sid"]?.stringValue, "catalog")
        XCTAssertEqual(qry["dbs"]?.int64Value, 1)
        XCTAssertEqual(qry["zoid"]?.stringValue, DatabaseScope.publicOwnerRecordName)
        XCTAssertEqual(qry["af"]?["name"]?.stringValue, "Catan")
        let toAlice = try store.notifications(databaseID: aliceChannel.databaseID, after: aliceChannel.startCursor, limit: 10)
        XCTAssertEqual(toAlice.count, 1)
        XCTAssertEqual(try JSONValue.parse(toAlice[0].payload)["ck"]?["fet"]?["dbs"]?.int64Value, 1)

        let removed = try store.modifySubscriptions(publicScope(bob), operations: [.delete(subscriptionID: "catalog")])
        guard case .success? = removed.first else { return XCTFail("bob deletes his own subscription: \(removed)") }
        XCTAssertEqual(try store.listSubscriptions(publicScope(alice)).count, 1, "bob's delete removed only his own")
        if case .failure(let error) = try store.modifySubscriptions(publicScope(bob), operations: [.delete(subscriptionID: "catalog")]).first {
            XCTAssertEqual(error.code, .notFound)
            XCTAssertEqual(error.subscriptionID, "catalog")
        } else {
            XCTFail("deleting a subscription twice must be NOT_FOUND")
        }
    }

    func testTheSubscriptionCapCountsEachUsersOwn() throws {
        let cap = StoreLimits.maximumSubscriptions
        for start in stride(from: 0, to: cap, by: 400) {
            let batch = (start..<min(start + 400, cap)).map {
                SubscriptionOperation.save(Subscription(subscriptionID: "z\($0)", kind: .zone, zoneID: .default))
            }
            XCTAssertTrue(try store.modifySubscriptions(publicScope(alice), operations: batch).allSatisfy { (try? $0.get()) != nil })
        }
        let over = try store.modifySubscriptions(publicScope(alice), operations: [.save(Subscription(subscriptionID: "one-more", kind: .zone, zoneID: .default))])
        guard case .failure(let error)? = over.first else { return XCTFail("alice is over the cap: \(over)") }
        XCTAssertEqual(error.code, .limitExceeded)
        let bobs = try store.modifySubscriptions(publicScope(bob), operations: [.save(Subscription(subscriptionID: "mine", kind: .zone, zoneID: .default))])
        guard case .success? = bobs.first else { return XCTFail("bob has his own allowance: \(bobs)") }
    }

    static let examplePEM = """
        -----BEGIN EC PARAMETERS-----
        BggqhkjOPQMBBw==
        -----END EC PARAMETERS-----
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIACavEXTsnHopujuW/G1HpEU0NqB7m79FpIvSJwOIP9NoAoGCCqGSM49
        AwEHoUQDQgAE8JZkvwzCIs/Ip7+pyk0yjo5f1Rw2UW5Vk2OEWN5y1Dg4EkFcNm8p
        whTvYlOeUpqE6qPe+8k2OLJEkQwfGp0B7g==
        -----END EC PRIVATE KEY-----
        """
    static let examplePublicPEM = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8JZkvwzCIs/Ip7+pyk0yjo5f1Rw2
        UW5Vk2OEWN5y1Dg4EkFcNm8pwhTvYlOeUpqE6qPe+8k2OLJEkQwfGp0B7g==
        -----END PUBLIC KEY-----
        """

    func testServerKeysAreRegisteredOnceWithTheirOwnUser() throws {
        let keyID = try store.addServerKey(pem: Self.examplePEM, name: "catalog importer")
        XCTAssertEqual(keyID.count, 64)
        XCTAssertEqual(try store.addServerKey(pem: Self.examplePublicPEM, name: nil), keyID, "the same key, from its public half")
        let key = try XCTUnwrap(try store.serverKey(keyID: keyID))
        XCTAssertEqual(key.publicKeyDER.count, 91, "DER SubjectPublicKeyInfo of a P-256 key")
        XCTAssertTrue(try store.listUsers().contains(key.user))
        XCTAssertNil(try store.serverKey(keyID: String(repeating: "0", count: 64)))
        XCTAssertNil(try store.serverKey(keyID: "not-hex"))
        assertThrows(.badRequest) { try store.addServerKey(pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----", name: nil) }
    }

    /// Four `key add` of one key at once (four daemons' operators, say) register it once: one
    /// key id, one user acting for it.
    func testOneKeyAddedFourTimesAtOnceIsOneKeyWithOneUser() throws {
        let base = store.base
        let keyIDs = try BlockingStore.run {
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<4 { group.addTask { try await base.addServerKey(pem: Self.examplePEM, name: nil) } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
        }
        XCTAssertEqual(keyIDs.count, 1)
        let keyID = try XCTUnwrap(keyIDs.first)
        let user = try XCTUnwrap(try store.serverKey(keyID: keyID)).user
        XCTAssertEqual(try store.listUsers().filter { $0.name == user.name }, [user])
    }
}

extension JSONValue {
    /// The record dictionary with `recordChangeTag` set.
    fileprivate func withTag(_ tag: String) -> JSONValue {
        guard case .object(var members) = self else { return self }
        members["recordChangeTag"] = .string(tag)
        return .object(members)
    }
}
