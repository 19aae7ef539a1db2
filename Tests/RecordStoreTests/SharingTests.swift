import Foundation
import RecordModel
import RecordStore
import XCTest

extension BlockingStore {
    func createUser(name: String, email: String?) throws -> (user: User, token: String) {
        try wait { try await $0.createUser(name: name, email: email) }
    }

    func resolveShares(_ scope: DatabaseScope, _ guids: [String], accept: Bool) throws -> [Result<JSONValue, ServerError>] {
        try wait { try await $0.resolveShares(scope, shortGUIDs: guids, accept: accept) }
    }

    func invitations(_ scope: DatabaseScope) throws -> [JSONValue] { try wait { try await $0.invitations(scope) } }
    func declineInvitations(_ scope: DatabaseScope, _ guids: [String]) throws -> [Result<JSONValue, ServerError>] {
        try wait { try await $0.declineInvitations(scope, shortGUIDs: guids) }
    }
    func lookupSharedZone(_ scope: DatabaseScope, zone: ZoneID) throws -> ZoneInfo { try wait { try await $0.lookupSharedZone(scope, zone: zone) } }
    func discoverUsers(emails: [String], recordNames: [String]) throws -> [UserIdentity] {
        try wait { try await $0.discoverUsers(emails: emails, recordNames: recordNames) }
    }
}

/// Sharing a zone at the store: the share record, resolve/accept, the shared
/// database for every kind of caller, and notifications. Runs on SQLite, and on PostgreSQL with
/// SCOREBOOK_STORE_BACKEND=postgres.
final class SharingTests: StoreTestCase {
    let zoneName = "Friday"
    var ownerZone: ZoneID { ZoneID(zoneName: zoneName) }
    var sharedZone: ZoneID { ZoneID(zoneName: zoneName, ownerRecordName: alice.recordName) }

    var bob: User!, carol: User!, dave: User!, erin: User!, frank: User!
    var aliceScope: DatabaseScope!
    var shortGUID = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        bob = try store.createUser(name: "bob", email: "Bob@Example.com").user
        carol = try store.createUser(name: "carol", email: "carol@example.com").user
        dave = try store.createUser(name: "dave", email: "dave@example.com").user
        erin = try store.createUser(name: "erin", email: "erin@example.com").user
        frank = try store.createUser(name: "frank", email: "frank@example.com").user
        aliceScope = dev
    }

    func shared(_ user: User) -> DatabaseScope { DatabaseScope(user: user, container: Self.container, environment: .development, kind: .shared) }
    func privateScope(_ user: User) -> DatabaseScope { DatabaseScope(user: user, container: Self.container, environment: .development) }

    func participant(email: String, _ permission: String) -> JSONValue {
        ["type": "USER", "permission": .string(permission), "acceptanceStatus": "INVITED",
         "userIdentity": ["lookupInfo": ["emailAddress": .string(email)]]]
    }

    func participant(recordName: String, _ permission: String) -> JSONValue {
        ["type": "USER", "permission": .string(permission), "userIdentity": ["lookupInfo": ["userRecordName": .string(recordName)]]]
    }

    func shareRecord(_ participants: [JSONValue], tag: String? = nil) -> JSONValue {
        var members: [String: JSONValue] = [
            "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "publicPermission": "NONE",
            "fields": ["cloudkit.title": ["value": "Friday games"]], "participants": .array(participants),
        ]
        if let tag { members["recordChangeTag"] = .string(tag) }
        return .object(members)
    }

    /// Alice's zone with two games, shared with bob (read-write, by email), carol (read-only, by
    /// record name), dave (read-write) and erin (read-only, never accepts); bob, carol and dave accept.
    @discardableResult
    func shareFriday() throws -> JSONValue {
        _ = try store.createZone(aliceScope, zoneName: zoneName)
        try save(aliceScope, zone: ownerZone, record("g1", "Game", ["name": field("Catan")]))
        try save(aliceScope, zone: ownerZone, record("g2", "Game", ["name": field("Azul")]))
        let share = try save(aliceScope, zone: ownerZone, shareRecord([
            participant(email: "bob@example.com", "READ_WRITE"), participant(recordName: carol.recordName, "READ_ONLY"),
            participant(email: "dave@example.com", "READ_WRITE"), participant(email: "erin@example.com", "READ_ONLY"),
        ]))
        let json = try JSONValue.parse(share.json().serialized())
        shortGUID = try XCTUnwrap(json["shortGUID"]?.stringValue)
        for user in [bob!, carol!, dave!] {
            let accepted = try store.resolveShares(privateScope(user), [shortGUID], accept: true)
            guard case .success(let result) = accepted.first else {
                XCTFail("\(user.name) could not accept: \(accepted)")
                throw StoreTestFailure()
            }
            XCTAssertEqual(result["participantStatus"]?.stringValue, "ACCEPTED")
        }
        return json
    }

    func removeDave() throws {
        let current = try XCTUnwrap(lookup(aliceScope, zone: ownerZone, "cloudkit.zoneshare"))
        try save(aliceScope, zone: ownerZone, .update, shareRecord([
            participant(email: "bob@example.com", "READ_WRITE"), participant(recordName: carol.recordName, "READ_ONLY"),
            participant(email: "erin@example.com", "READ_ONLY"),
        ], tag: current.changeTag))
    }

    func assertZoneNotFound(_ body: @autoclosure () throws -> Any, _ who: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), who, file: file, line: line) { error in
            XCTAssertEqual((error as? ServerError)?.code, .zoneNotFound, "\(who): \(error)", file: file, line: line)
        }
    }

    func testTheSavedShareAnswersItsGUIDLinkOwnerAndParticipants() throws {
        let share = try shareFriday()
        XCTAssertEqual(shortGUID.count, 32)
        XCTAssertTrue(share["url"]?.stringValue?.hasSuffix("/share/" + shortGUID) ?? false, "\(share)")
        XCTAssertEqual(share["owner"]?["userIdentity"]?["userRecordName"]?.stringValue, alice.recordName)
        XCTAssertEqual(share["currentUserParticipant"]?["type"]?.stringValue, "OWNER")
        let participants = try XCTUnwrap(share["participants"]?.arrayValue)
        XCTAssertEqual(participants.count, 5, "owner and four invitees")
        XCTAssertEqual(participants.filter { $0["acceptanceStatus"]?.stringValue == "PENDING" }.count, 4, "saved before anyone accepted (CloudKit's PENDING)")
        // Bob, invited by the email given at user create (case aside), is the same user.
        let bobEntry = participants.first { $0["userIdentity"]?["userRecordName"]?.stringValue == bob.recordName }
        XCTAssertEqual(bobEntry?["permission"]?.stringValue, "READ_WRITE")
        // Seen by bob after accepting: his own participant, accepted.
        let seen = try XCTUnwrap(lookup(shared(bob), zone: sharedZone, "cloudkit.zoneshare"))
        let seenJSON = try JSONValue.parse(seen.json().serialized())
        XCTAssertEqual(seenJSON["currentUserParticipant"]?["userIdentity"]?["userRecordName"]?.stringValue, bob.recordName)
        XCTAssertEqual(seenJSON["currentUserParticipant"]?["acceptanceStatus"]?.stringValue, "ACCEPTED")
        XCTAssertEqual(seenJSON["fields"]?["cloudkit.title"]?["value"]?.stringValue, "Friday games")
    }

    /// Every shared-database operation for each kind of caller.
    func testPermissionMatrixOfTheSharedDatabase() throws {
        try shareFriday()
        try removeDave()
        let game = query("Game")

        // Owner (its private database) and the read-write participant: read and write.
        try save(aliceScope, zone: ownerZone, record("g3", "Game", ["name": field("Root")]))
        let bobs = try save(shared(bob), zone: sharedZone, record("g4", "Game", ["name": field("Hive")]))
        XCTAssertEqual(bobs.created.userRecordName, bob.recordName, "created names the writer")
        XCTAssertEqual(bobs.zoneID.ownerRecordName, alice.recordName)
        XCTAssertEqual(try lookup(aliceScope, zone: ownerZone, "g4")?.modified.userRecordName, bob.recordName)
        let updated = try save(shared(bob), zone: sharedZone, .update, record("g1", nil, ["name": field("Catan 2")],
                                                                              tag: try XCTUnwrap(lookup(shared(bob), zone: sharedZone, "g1")).changeTag))
        XCTAssertEqual(updated.modified.userRecordName, bob.recordName)
        XCTAssertEqual(updated.created.userRecordName, alice.recordName)

        // Read-only and read-write participants read everything the owner reads.
        for user in [bob!, carol!] {
            let who = user.name
            XCTAssertEqual(try store.listZones(shared(user)).map(\.zoneID), [sharedZone], who)
            XCTAssertEqual(try store.lookupSharedZone(shared(user), zone: sharedZone).zoneID, sharedZone, who)
            XCTAssertEqual(try lookup(shared(user), zone: sharedZone, "g3")?.recordName, "g3", who)
            XCTAssertEqual(try store.queryRecords(shared(user), zone: sharedZone, query: game, resultsLimit: 100, continuationMarker: nil)
                .records.map(\.recordName).sorted(), ["g1", "g2", "g3", "g4"], who)
            let feed = try fetchChanges(shared(user), zone: sharedZone)
            XCTAssertEqual(Set(feed.state.keys), ["g1", "g2", "g3", "g4", "cloudkit.zoneshare"], who)
            XCTAssertEqual(try store.databaseChanges(shared(user), syncToken: nil, resultsLimit: 0).zones.map(\.zoneID), [sharedZone], who)
            XCTAssertNoThrow(try store.modifySubscriptions(shared(user), operations: [.save(zoneSubscription("s-\(who)"))]), who)
        }

        // The read-only participant's write is ACCESS_DENIED for the whole request, and nothing lands.
        XCTAssertThrowsError(try modify(shared(carol), zone: sharedZone, [(.create, record("c1", "Game", ["name": field("Go")]))])) {
            XCTAssertEqual(($0 as? ServerError)?.code, .accessDenied)
        }
        XCTAssertThrowsError(try modify(shared(carol), zone: sharedZone, [(.forceDelete, record("g1"))])) {
            XCTAssertEqual(($0 as? ServerError)?.code, .accessDenied)
        }
        XCTAssertNil(try lookup(aliceScope, zone: ownerZone, "c1"))
        XCTAssertNotNil(try lookup(aliceScope, zone: ownerZone, "g1"))

        // Removed, invited-not-accepted and stranger: the zone does not exist for them, exactly as
        // a zone that never existed.
        let neverExisted = ZoneID(zoneName: "NoSuchZone", ownerRecordName: alice.recordName)
        for user in [dave!, erin!, frank!] {
            for zone in [sharedZone, neverExisted] {
                let who = "\(user.name) on \(zone.zoneName)"
                assertZoneNotFound(try store.lookupSharedZone(shared(user), zone: zone), who)
                assertZoneNotFound(try store.lookupRecords(shared(user), zone: zone, recordNames: ["g1"]), who)
                assertZoneNotFound(try store.queryRecords(shared(user), zone: zone, query: game, resultsLimit: 10, continuationMarker: nil), who)
                assertZoneNotFound(try store.zoneChanges(shared(user), zone: zone, syncToken: nil, resultsLimit: 10, recordTypes: nil), who)
                assertZoneNotFound(try modify(shared(user), zone: zone, [(.create, record("x1", "Game", ["name": field("X")]))]), who)
                assertZoneNotFound(try modify(shared(user), zone: zone, [(.forceDelete, record("cloudkit.zoneshare"))]), who)
                let refused = try store.modifySubscriptions(shared(user), operations: [.save(zoneSubscription("s", zone: zone))])
                guard case .failure(let error) = refused.first else { return XCTFail("\(who) subscribed") }
                XCTAssertEqual(error.code, .zoneNotFound, who)
            }
            XCTAssertTrue(try store.listZones(shared(user)).isEmpty, user.name)
            XCTAssertTrue(try store.databaseChanges(shared(user), syncToken: nil, resultsLimit: 0).zones.isEmpty, user.name)
            // Nobody's private database shows alice's zone.
            XCTAssertFalse(try store.listZones(privateScope(user)).contains { $0.zoneID.zoneName == zoneName }, user.name)
        }
        XCTAssertNil(try lookup(aliceScope, zone: ownerZone, "x1"))
        // A shared zoneID without its owner is a bad request, not a guess.
        XCTAssertThrowsError(try store.lookupRecords(shared(bob), zone: ownerZone, recordNames: ["g1"])) {
            XCTAssertEqual(($0 as? ServerError)?.code, .badRequest)
        }
        // The stranger cannot resolve the link; the invited one can, but has no zone until it accepts.
        guard case .failure(let strangerError) = try store.resolveShares(privateScope(frank), [shortGUID], accept: true).first else {
            return XCTFail("a stranger resolved the share")
        }
        XCTAssertEqual(strangerError.code, .notFound)
        guard case .success(let erinSees) = try store.resolveShares(privateScope(erin), [shortGUID], accept: false).first else {
            return XCTFail("erin could not resolve")
        }
        XCTAssertEqual(erinSees["participantStatus"]?.stringValue, "PENDING")
        XCTAssertEqual(erinSees["zoneID"]?["ownerRecordName"]?.stringValue, alice.recordName)
    }

    /// Declining an invitation, for every kind of caller: only the invited one who has not
    /// accepted turns it down; for the owner, participants who accepted, a removed one and a
    /// stranger the share is unknown, as an unknown link is, and nothing changes.
    func testOnlyAPendingInviteeDeclinesAndEveryoneElseFindsNoShare() throws {
        try shareFriday()
        try removeDave()
        for user in [alice!, bob!, carol!, dave!, frank!] {
            guard case .failure(let error) = try store.declineInvitations(privateScope(user), [shortGUID]).first else {
                return XCTFail("\(user.name) declined the share")
            }
            XCTAssertEqual(error.code, .notFound, user.name)
        }
        XCTAssertEqual(try store.listZones(shared(bob)).map(\.zoneID), [sharedZone], "bob's acceptance stands")
        XCTAssertEqual(try store.listZones(shared(carol)).map(\.zoneID), [sharedZone], "carol's acceptance stands")

        guard case .success(let declined) = try store.declineInvitations(privateScope(erin), [shortGUID]).first else {
            return XCTFail("erin could not decline")
        }
        XCTAssertEqual(declined["participantStatus"]?.stringValue, "REMOVED")
        XCTAssertTrue(try store.invitations(privateScope(erin)).isEmpty, "the declined invitation is gone")
        XCTAssertTrue(try store.listZones(shared(erin)).isEmpty, "declining gives no access")
        // Declining is the invitee's own word, not the owner's removal: following the link again
        // still accepts (as a CloudKit invitee may accept a share whenever it likes).
        guard case .success(let changedMind) = try store.resolveShares(privateScope(erin), [shortGUID], accept: true).first else {
            return XCTFail("erin could not accept after declining")
        }
        XCTAssertEqual(changedMind["participantStatus"]?.stringValue, "ACCEPTED")
        XCTAssertEqual(try store.listZones(shared(erin)).map(\.zoneID), [sharedZone])
    }

    func testOnlyTheOwnerChangesTheShareAndAParticipantLeavesByDeletingIt() throws {
        try shareFriday()
        let share = try XCTUnwrap(lookup(shared(bob), zone: sharedZone, "cloudkit.zoneshare"))
        let results = try modify(shared(bob), zone: sharedZone, atomic: false,
                                 [(.update, shareRecord([participant(recordName: frank.recordName, "READ_WRITE")], tag: share.changeTag))])
        guard case .failed(let error) = results.first else { return XCTFail("bob changed the share") }
        XCTAssertEqual(error.code, .accessDenied)
        let bobsToken = try store.databaseChanges(shared(bob), syncToken: nil, resultsLimit: 0).syncToken
        let carolsToken = try store.databaseChanges(shared(carol), syncToken: nil, resultsLimit: 0).syncToken

        // Bob leaves; carol, read-only, may leave too.
        XCTAssertNoThrow(try modify(shared(bob), zone: sharedZone, [(.forceDelete, record("cloudkit.zoneshare"))]))
        XCTAssertNoThrow(try modify(shared(carol), zone: sharedZone, [(.forceDelete, record("cloudkit.zoneshare"))]))
        for (user, token) in [(bob!, bobsToken), (carol!, carolsToken)] {
            assertZoneNotFound(try store.lookupRecords(shared(user), zone: sharedZone, recordNames: ["g1"]), user.name)
            let changes = try store.databaseChanges(shared(user), syncToken: token, resultsLimit: 0)
            XCTAssertEqual(changes.zones.map(\.zoneID), [sharedZone], user.name)
            XCTAssertEqual(changes.zones.map(\.deleted), [true], user.name)
        }
        // The owner's zone and share are untouched; dave still has the zone.
        XCTAssertNotNil(try lookup(aliceScope, zone: ownerZone, "cloudkit.zoneshare"))
        XCTAssertEqual(try lookup(shared(dave), zone: sharedZone, "g1")?.recordName, "g1")
    }

    func testAcceptingNeverEmptiesTheOwnersZoneAndShowsTheZoneAsAdded() throws {
        _ = try store.createZone(aliceScope, zoneName: zoneName)
        for index in 0..<30 { try save(aliceScope, zone: ownerZone, record("g\(index)", "Game", ["name": field(.string("Game \(index)"))])) }
        let ownerFeed = try fetchChanges(aliceScope, zone: ownerZone)
        let bobsEmpty = try store.databaseChanges(shared(bob), syncToken: nil, resultsLimit: 0)
        XCTAssertTrue(bobsEmpty.zones.isEmpty)
        let share = try save(aliceScope, zone: ownerZone, shareRecord([participant(email: "bob@example.com", "READ_WRITE")]))
        let guid = try XCTUnwrap(JSONValue.parse(share.json().serialized())["shortGUID"]?.stringValue)
        // Invited is not yet added.
        XCTAssertTrue(try store.databaseChanges(shared(bob), syncToken: bobsEmpty.syncToken, resultsLimit: 0).zones.isEmpty)
        XCTAssertEqual(try store.invitations(privateScope(bob)).compactMap { $0["shortGUID"]?.stringValue }, [guid])
        XCTAssertEqual(try store.invitations(privateScope(bob)).first?["title"]?.stringValue, "Friday games")
        _ = try store.resolveShares(privateScope(bob), [guid], accept: true)
        _ = try store.resolveShares(privateScope(bob), [guid], accept: true)  // accepting twice changes nothing
        XCTAssertTrue(try store.invitations(privateScope(bob)).isEmpty, "an accepted share is no longer an invitation")
        let added = try store.databaseChanges(shared(bob), syncToken: bobsEmpty.syncToken, resultsLimit: 0)
        XCTAssertEqual(added.zones.map(\.zoneID), [sharedZone])
        XCTAssertEqual(added.zones.map(\.deleted), [false])
        // The owner's zone holds every record, and its feed since before sharing deletes nothing.
        let after = try fetchChanges(aliceScope, zone: ownerZone, from: ownerFeed.token)
        XCTAssertFalse(after.state.values.contains { $0 == nil }, "no deletion in the owner's zone")
        XCTAssertEqual(try store.queryRecords(aliceScope, zone: ownerZone, query: query("Game"), resultsLimit: 200, continuationMarker: nil).records.count, 30)
        XCTAssertEqual(try fetchChanges(shared(bob), zone: sharedZone).state.count, 31, "30 games and the share")
        // A change in the zone shows it as changed; nothing new shows nothing.
        let quiet = try store.databaseChanges(shared(bob), syncToken: added.syncToken, resultsLimit: 0)
        XCTAssertTrue(quiet.zones.isEmpty)
        try save(aliceScope, zone: ownerZone, record("late", "Game", ["name": field("Late")]))
        XCTAssertEqual(try store.databaseChanges(shared(bob), syncToken: quiet.syncToken, resultsLimit: 0).zones.map(\.zoneID), [sharedZone])
        // Another user's token is refused.
        XCTAssertThrowsError(try store.databaseChanges(shared(carol), syncToken: quiet.syncToken, resultsLimit: 0)) {
            XCTAssertEqual(($0 as? ServerError)?.code, .badRequest)
        }
    }

    func testRemovalUnshareAndZoneDeletionEndAccessAtOnce() throws {
        try shareFriday()
        let davesToken = try store.databaseChanges(shared(dave), syncToken: nil, resultsLimit: 0).syncToken
        try removeDave()
        assertZoneNotFound(try store.lookupRecords(shared(dave), zone: sharedZone, recordNames: ["g1"]), "removed")
        XCTAssertEqual(try store.databaseChanges(shared(dave), syncToken: davesToken, resultsLimit: 0).zones.map(\.deleted), [true])
        XCTAssertEqual(try lookup(shared(bob), zone: sharedZone, "g1")?.recordName, "g1", "the others keep it")
        // Re-permissioning: bob becomes read-only and is refused at his next write.
        var current = try XCTUnwrap(lookup(aliceScope, zone: ownerZone, "cloudkit.zoneshare"))
        try save(aliceScope, zone: ownerZone, .update, shareRecord([participant(email: "bob@example.com", "READ_ONLY"),
                                                                   participant(recordName: carol.recordName, "READ_ONLY")], tag: current.changeTag))
        XCTAssertThrowsError(try modify(shared(bob), zone: sharedZone, [(.create, record("b9", "Game", ["name": field("B")]))])) {
            XCTAssertEqual(($0 as? ServerError)?.code, .accessDenied)
        }
        // Unsharing ends everyone's access.
        let carolsToken = try store.databaseChanges(shared(carol), syncToken: nil, resultsLimit: 0).syncToken
        current = try XCTUnwrap(lookup(aliceScope, zone: ownerZone, "cloudkit.zoneshare"))
        try modify(aliceScope, zone: ownerZone, [(.delete, record("cloudkit.zoneshare", tag: current.changeTag))])
        for user in [bob!, carol!] {
            assertZoneNotFound(try store.lookupRecords(shared(user), zone: sharedZone, recordNames: ["g1"]), user.name)
        }
        XCTAssertEqual(try store.databaseChanges(shared(carol), syncToken: carolsToken, resultsLimit: 0).zones.map(\.deleted), [true])
        XCTAssertEqual(try lookup(aliceScope, zone: ownerZone, "g1")?.recordName, "g1", "unsharing keeps the owner's records")

        // Share again, then the owner deletes the zone.
        let again = try save(aliceScope, zone: ownerZone, shareRecord([participant(email: "bob@example.com", "READ_WRITE")]))
        let guid = try XCTUnwrap(JSONValue.parse(again.json().serialized())["shortGUID"]?.stringValue)
        XCTAssertNotEqual(guid, shortGUID, "a new share has a new link")
        _ = try store.resolveShares(privateScope(bob), [guid], accept: true)
        let bobsToken = try store.databaseChanges(shared(bob), syncToken: nil, resultsLimit: 0).syncToken
        try store.deleteZone(aliceScope, zoneName: zoneName)
        XCTAssertEqual(try store.databaseChanges(shared(bob), syncToken: bobsToken, resultsLimit: 0).zones.map(\.deleted), [true])
        assertZoneNotFound(try store.lookupSharedZone(shared(bob), zone: sharedZone), "zone deleted")
        guard case .failure(let error) = try store.resolveShares(privateScope(bob), [guid], accept: false).first else {
            return XCTFail("a deleted zone's share still resolves")
        }
        XCTAssertEqual(error.code, .notFound)
    }

    func testSubscriptionsOfOwnerAndParticipantsFireForChangesByAnyOfThem() throws {
        try shareFriday()
        let channels = try [alice!, bob!, carol!, dave!, erin!].map { try store.createPushToken(privateScope($0), apnsEnvironment: "development") }
        _ = try store.modifySubscriptions(aliceScope, operations: [.save(zoneSubscription("alice-zone", zone: ownerZone))])
        _ = try store.modifySubscriptions(shared(bob), operations: [.save(zoneSubscription("bob-zone", zone: sharedZone))])
        _ = try store.modifySubscriptions(shared(carol), operations: [.save(try Subscription(json: [
            "subscriptionID": "carol-db", "subscriptionType": "database", "firesOn": ["create", "update", "delete"],
        ]))])
        _ = try store.modifySubscriptions(shared(dave), operations: [.save(zoneSubscription("dave-zone", zone: sharedZone))])
        // The subscriptions of the shared database are not the private database's.
        XCTAssertEqual(try store.listSubscriptions(shared(bob)).map(\.subscriptionID), ["bob-zone"])
        XCTAssertTrue(try store.listSubscriptions(privateScope(bob)).isEmpty)
        try removeDave()
        func payloads(_ index: Int) throws -> [JSONValue] {
            try store.notifications(databaseID: channels[index].databaseID, after: channels[index].startCursor, limit: 100)
                .map { try JSONValue.parse($0.payload) }
        }
        let before = try (0..<5).map { try payloads($0).count }

        // Bob writes: alice hears of it in her private database (dbs 2), bob and carol in their
        // shared databases (dbs 3); removed dave and invited erin hear nothing.
        try save(shared(bob), zone: sharedZone, record("b1", "Game", ["name": field("Bob's")]))
        let alices = try payloads(0).dropFirst(before[0])
        XCTAssertEqual(alices.map { $0["ck"]?["fet"]?["dbs"]?.int64Value }, [2])
        XCTAssertEqual(alices.first?["ck"]?["fet"]?["zoid"]?.stringValue, alice.recordName)
        let bobs = try payloads(1).dropFirst(before[1])
        XCTAssertEqual(bobs.map { $0["ck"]?["fet"]?["sid"]?.stringValue }, ["bob-zone"])
        XCTAssertEqual(bobs.first?["ck"]?["fet"]?["dbs"]?.int64Value, 3)
        XCTAssertEqual(bobs.first?["ck"]?["fet"]?["zoid"]?.stringValue, alice.recordName)
        let carols = try payloads(2).dropFirst(before[2])
        XCTAssertEqual(carols.map { $0["ck"]?["met"]?["dbs"]?.int64Value }, [3])
        XCTAssertEqual(try payloads(3).count, before[3], "a removed participant is never notified again")
        XCTAssertEqual(try payloads(4).count, before[4], "an invitation not accepted is not notified")

        // The owner writes: bob and carol hear of it too.
        try save(aliceScope, zone: ownerZone, record("a1", "Game", ["name": field("Alice's")]))
        XCTAssertEqual(try payloads(1).count, before[1] + 2)
        XCTAssertEqual(try payloads(2).count, before[2] + 2)
        XCTAssertEqual(try payloads(3).count, before[3])

        // Erin accepts: her database subscription hears of the zone she now has; nobody else's fires.
        _ = try store.modifySubscriptions(shared(erin), operations: [.save(try Subscription(json: [
            "subscriptionID": "erin-db", "subscriptionType": "database", "firesOn": ["create", "update", "delete"],
        ]))])
        let counts = try (0..<5).map { try payloads($0).count }
        _ = try store.resolveShares(privateScope(erin), [shortGUID], accept: true)
        XCTAssertEqual(try payloads(4).dropFirst(counts[4]).map { $0["ck"]?["met"]?["dbs"]?.int64Value }, [3])
        XCTAssertEqual(try (0..<4).map { try payloads($0).count }, Array(counts[0..<4]), "an acceptance notifies only the one who accepted")
    }

    func testAShareHoldsAHundredParticipants() throws {
        _ = try store.createZone(aliceScope, zoneName: zoneName)
        let users = try (0..<100).map { try store.createUser(name: "p\($0)", email: "p\($0)@example.com").user }
        let share = try save(aliceScope, zone: ownerZone, shareRecord(users.enumerated().map { index, user in
            index % 2 == 0 ? participant(email: "p\(index)@example.com", "READ_WRITE") : participant(recordName: user.recordName, "READ_WRITE")
        }))
        let json = try JSONValue.parse(share.json().serialized())
        XCTAssertEqual(json["participants"]?.arrayValue?.count, 101)
        let guid = try XCTUnwrap(json["shortGUID"]?.stringValue)
        for user in users {
            guard case .success = try store.resolveShares(privateScope(user), [guid], accept: true).first else { return XCTFail("\(user.name)") }
        }
        try save(shared(users[99]), zone: sharedZone, record("last", "Game", ["name": field("Last")]))
        XCTAssertEqual(try lookup(shared(users[0]), zone: sharedZone, "last")?.created.userRecordName, users[99].recordName)
        XCTAssertEqual(try store.listZones(shared(users[50])).map(\.zoneID), [sharedZone])
    }

    func testUsersAreFoundByTheEmailGivenAtCreation() throws {
        let found = try store.discoverUsers(emails: ["bob@example.com", "nobody@example.com"], recordNames: [carol.recordName, "_nope"])
        XCTAssertEqual(found.map(\.recordName), [bob.recordName, carol.recordName])
        XCTAssertEqual(found.first?.email, "bob@example.com", "stored lower-cased")
        XCTAssertThrowsError(try store.createUser(name: "bob2", email: "BOB@example.com")) {
            XCTAssertEqual(($0 as? ServerError)?.code, .exists)
        }
        XCTAssertThrowsError(try store.createUser(name: "zed", email: "not-an-address")) {
            XCTAssertEqual(($0 as? ServerError)?.code, .badRequest)
        }
    }

    func testAnInvitationByEmailOfAUserCreatedLaterIsTheirs() throws {
        _ = try store.createZone(aliceScope, zoneName: zoneName)
        let share = try save(aliceScope, zone: ownerZone, shareRecord([participant(email: "gina@example.com", "READ_WRITE")]))
        let guid = try XCTUnwrap(JSONValue.parse(share.json().serialized())["shortGUID"]?.stringValue)
        let gina = try store.createUser(name: "gina", email: "gina@example.com").user
        XCTAssertEqual(try store.invitations(privateScope(gina)).count, 1)
        guard case .success = try store.resolveShares(privateScope(gina), [guid], accept: true).first else { return XCTFail("gina could not accept") }
        try save(shared(gina), zone: sharedZone, record("g1", "Game", ["name": field("Gina's")]))
        XCTAssertEqual(try lookup(aliceScope, zone: ownerZone, "g1")?.created.userRecordName, gina.recordName)
    }

    // MARK: Helpers

    func query(_ type: String) -> RecordQuery {
        try! RecordQuery(json: ["recordType": .string(type)])
    }

    func zoneSubscription(_ id: String, zone: ZoneID? = nil) throws -> Subscription {
        try Subscription(json: ["subscriptionID": .string(id), "subscriptionType": "zone", "zoneID": (zone ?? sharedZone).json,
                                "firesOn": ["create", "update", "delete"]])
    }
}
