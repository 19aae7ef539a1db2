import Foundation
import RecordModel
import Synchronization
import XCTest

/// Sharing a zone over HTTP against the real daemon: the share record, invitations,
/// resolve / accept, the `/shared/` database for each kind of caller, and push to participants.
final class APISharingTests: DaemonTestCase {
    struct Person {
        var recordName: String
        var token: String
        var email: String
    }

    let zone = "Friday"

    func person(_ name: String) throws -> Person {
        let unique = "\(name)-\(UUID().uuidString.prefix(8).lowercased())"
        let email = "\(unique)@example.com"
        let made = try daemon.createUserInfo(unique, email: email)
        return Person(recordName: made.userRecordName, token: made.token, email: email)
    }

    func shared(_ operation: String, _ caller: Person, _ body: JSONValue) throws -> (status: Int, body: JSONValue) {
        try daemon.post(path(operation, database: "shared"), token: caller.token, json: body.serializedString())
    }

    func publicCall(_ operation: String, _ caller: Person, _ body: JSONValue) throws -> (status: Int, body: JSONValue) {
        try daemon.post(path(operation, database: "public"), token: caller.token, json: body.serializedString())
    }

    func zoneID(_ owner: Person, _ name: String? = nil) -> JSONValue {
        ["zoneName": .string(name ?? zone), "ownerRecordName": .string(owner.recordName)]
    }

    func participant(_ who: Person, _ permission: String, byEmail: Bool = true, status: String = "INVITED") -> JSONValue {
        let lookup: JSONValue = byEmail ? ["emailAddress": .string(who.email)] : ["userRecordName": .string(who.recordName)]
        return ["type": "USER", "permission": .string(permission), "acceptanceStatus": .string(status), "userIdentity": ["lookupInfo": lookup]]
    }

    func share(_ participants: [JSONValue], tag: String? = nil) -> JSONValue {
        var record: [String: JSONValue] = [
            "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "publicPermission": "NONE",
            "fields": ["cloudkit.title": ["value": "Friday games"]], "participants": .array(participants),
        ]
        if let tag { record["recordChangeTag"] = .string(tag) }
        return .object(record)
    }

    func sharedModify(_ caller: Person, owner: Person, _ operations: [(String, JSONValue)]) throws -> (status: Int, body: JSONValue) {
        try shared("records/modify", caller, [
            "zoneID": zoneID(owner), "operations": .array(operations.map { ["operationType": .string($0.0), "record": $0.1] }),
        ])
    }

    func testAcceptanceStatusTakesCloudKitsValues() throws {
        let alice = try person("alice"), bob = try person("bob"), carol = try person("carol")
        try createZone(zone, alice.token)
        // What CloudKit clients send (PENDING), and this project's older INVITED, are both read.
        let saved = try XCTUnwrap(modify(alice.token, [("create", share([
            participant(bob, "READ_WRITE", status: "PENDING"), participant(carol, "READ_ONLY", status: "INVITED"),
        ]))], zone: zone).first)
        let guid = try XCTUnwrap(saved["shortGUID"]?.stringValue, "\(saved)")
        func statuses(_ share: JSONValue?) -> [String: String] {
            Dictionary(uniqueKeysWithValues: (share?["participants"]?.arrayValue ?? []).compactMap { entry in
                (entry["type"] == "OWNER" ? "OWNER" : entry["userIdentity"]?["lookupInfo"]?["emailAddress"]?.stringValue).map {
                    ($0, entry["acceptanceStatus"]?.stringValue ?? "") }
            })
        }
        XCTAssertEqual(statuses(saved), ["OWNER": "ACCEPTED", bob.email: "PENDING", carol.email: "PENDING"], "\(saved)")
        let resolved = try publicCall("records/resolve", bob, ["shortGUIDs": [["value": .string(guid)]]])
        XCTAssertEqual(resolved.body["results"]?.arrayValue?.first?["participantStatus"], "PENDING", "\(resolved.body)")
        XCTAssertEqual(try publicCall("records/accept", bob, ["shortGUIDs": [["value": .string(guid)]]]).status, 200)
        let after = try XCTUnwrap(lookup(alice.token, "cloudkit.zoneshare", zone: zone))
        XCTAssertEqual(statuses(after), ["OWNER": "ACCEPTED", bob.email: "ACCEPTED", carol.email: "PENDING"], "\(after)")
    }

    func testShareAcceptAndEveryKindOfCallerOverHTTP() throws {
        let alice = try person("alice"), bob = try person("bob"), carol = try person("carol"), erin = try person("erin"),
            frank = try person("frank")
        try createZone(zone, alice.token)
        try modify(alice.token, [("create", record("g1", "Game", ["name": ["value": "Catan"]]))], zone: zone)

        // The owner saves the share and gets its link and participants back.
        let saved = try XCTUnwrap(modify(alice.token, [("create", share([
            participant(bob, "READ_WRITE"), participant(carol, "READ_ONLY", byEmail: false), participant(erin, "READ_ONLY"),
        ]))], zone: zone).first)
        let guid = try XCTUnwrap(saved["shortGUID"]?.stringValue, "\(saved)")
        XCTAssertEqual(saved["url"]?.stringValue, "http://127.0.0.1:\(try daemon.port)/share/\(guid)")
        XCTAssertEqual(saved["recordType"], "cloudkit.share")
        XCTAssertEqual(saved["owner"]?["userIdentity"]?["userRecordName"]?.stringValue, alice.recordName)
        XCTAssertEqual(saved["participants"]?.arrayValue?.count, 4)
        XCTAssertEqual(saved["currentUserParticipant"]?["type"], "OWNER")

        // Bob finds the invitation without the link, and accepts it.
        let invitations = try shared("invitations/list", bob, [:])
        XCTAssertEqual(invitations.status, 200)
        XCTAssertEqual(invitations.body["invitations"]?.arrayValue?.map { $0["shortGUID"]?.stringValue }, [guid])
        XCTAssertEqual(invitations.body["invitations"]?.arrayValue?.first?["title"], "Friday games")
        XCTAssertEqual(invitations.body["invitations"]?.arrayValue?.first?["permission"], "READ_WRITE")
        let bobsBefore = try XCTUnwrap(shared("changes/database", bob, [:]).body["syncToken"]?.stringValue)
        let accepted = try publicCall("records/accept", bob, ["shortGUIDs": [["value": .string(guid)]]])
        XCTAssertEqual(accepted.status, 200)
        let result = try XCTUnwrap(accepted.body["results"]?.arrayValue?.first)
        XCTAssertEqual(result["participantStatus"], "ACCEPTED")
        XCTAssertEqual(result["participantPermission"], "READ_WRITE")
        XCTAssertEqual(result["databaseScope"], "SHARED")
        XCTAssertEqual(result["zoneID"], zoneID(alice))
        XCTAssertEqual(result["share"]?["currentUserParticipant"]?["userIdentity"]?["userRecordName"]?.stringValue, bob.recordName)
        XCTAssertEqual(try publicCall("records/accepts", carol, ["shortGUIDs": [["value": .string(guid)]]]).status, 200)
        XCTAssertTrue(try shared("invitations/list", bob, [:]).body["invitations"]?.arrayValue?.isEmpty ?? false)
        let added = try shared("changes/database", bob, ["syncToken": .string(bobsBefore)]).body
        XCTAssertEqual(added["zones"]?.arrayValue, [["zoneID": zoneID(alice)]])

        // Read-write: reads and writes, and the record names bob as its writer.
        XCTAssertEqual(try shared("zones/list", bob, [:]).body["zones"]?.arrayValue?.map { $0["zoneID"] }, [zoneID(alice)])
        XCTAssertEqual(try daemon.get(path("zones/list", database: "shared"), token: bob.token).status, 200)
        let bobWrote = try sharedModify(bob, owner: alice, [("create", record("b1", "Game", ["name": ["value": "Bob's"]]))])
        XCTAssertEqual(bobWrote.status, 200)
        XCTAssertEqual(bobWrote.body["records"]?.arrayValue?.first?["created"]?["userRecordName"]?.stringValue, bob.recordName)
        XCTAssertEqual(try lookup(alice.token, "b1", zone: zone)?["modified"]?["userRecordName"]?.stringValue, bob.recordName)

        // Read-only: reads, fetches changes, but any write is 403 for the whole request.
        let carolReads = try shared("records/lookup", carol, ["zoneID": zoneID(alice), "records": [["recordName": "b1"]]])
        XCTAssertEqual(carolReads.body["records"]?.arrayValue?.first?["recordName"], "b1")
        let carolFeed = try shared("changes/zone", carol, ["zones": [["zoneID": zoneID(alice)]]])
        XCTAssertEqual(Set(carolFeed.body["zones"]?.arrayValue?.first?["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } ?? []),
                       ["g1", "b1", "cloudkit.zoneshare"])
        let carolQuery = try shared("records/query", carol, ["zoneID": zoneID(alice), "query": ["recordType": "Game"]])
        XCTAssertEqual(carolQuery.body["records"]?.arrayValue?.count, 2)
        assertError(try sharedModify(carol, owner: alice, [("create", record("c1", "Game"))]), 403, "ACCESS_DENIED", "read-only write")
        XCTAssertNil(try lookup(alice.token, "c1", zone: zone))
        // Only the owner changes the share.
        let shareTag = try XCTUnwrap(lookup(alice.token, "cloudkit.zoneshare", zone: zone)?["recordChangeTag"]?.stringValue)
        let bobEdits = try sharedModify(bob, owner: alice, [("update", share([participant(frank, "READ_WRITE")], tag: shareTag))])
        XCTAssertEqual(bobEdits.body["records"]?.arrayValue?.first?["serverErrorCode"], "ACCESS_DENIED")

        // Invited-not-accepted and stranger: ZONE_NOT_FOUND, the same answer as for a zone that
        // does not exist at all; a stranger cannot resolve the link either.
        for (caller, who) in [(erin, "invited"), (frank, "stranger")] {
            for operation in ["records/lookup", "records/query", "records/modify"] {
                var body: [String: JSONValue] = ["zoneID": zoneID(alice), "records": [["recordName": "g1"]], "query": ["recordType": "Game"],
                                                 "operations": [["operationType": "create", "record": record("x", "Game")]]]
                let real = try shared(operation, caller, .object(body))
                body["zoneID"] = ["zoneName": .string(zone), "ownerRecordName": "_0000000000000000000000000000ffff"]
                let imaginary = try shared(operation, caller, .object(body))
                assertError(real, 404, "ZONE_NOT_FOUND", "\(who) \(operation)")
                XCTAssertEqual(real.body["reason"], imaginary.body["reason"], "\(who) \(operation): nothing tells the two apart")
            }
            let feed = try shared("changes/zone", caller, ["zones": [["zoneID": zoneID(alice)]]])
            XCTAssertEqual(feed.body["zones"]?.arrayValue?.first?["serverErrorCode"], "ZONE_NOT_FOUND", who)
            XCTAssertEqual(try shared("zones/list", caller, [:]).body["zones"]?.arrayValue, [], who)
            XCTAssertEqual(try shared("zones/lookup", caller, ["zones": [["zoneID": zoneID(alice)]]]).body["zones"]?.arrayValue?.first?["serverErrorCode"],
                           "ZONE_NOT_FOUND", who)
        }
        let strangerResolves = try publicCall("records/resolve", frank, ["shortGUIDs": [["value": .string(guid)]]])
        XCTAssertEqual(strangerResolves.body["results"]?.arrayValue?.first?["serverErrorCode"], "NOT_FOUND")
        XCTAssertNil(strangerResolves.body["results"]?.arrayValue?.first?["zoneID"], "a leaked link reveals nothing")

        // Removing bob takes effect at his very next request, without a restart.
        let bobsToken = try XCTUnwrap(shared("changes/database", bob, [:]).body["syncToken"]?.stringValue)
        let tag = try XCTUnwrap(lookup(alice.token, "cloudkit.zoneshare", zone: zone)?["recordChangeTag"]?.stringValue)
        let removal = try modify(alice.token, [("update", share([participant(carol, "READ_ONLY", byEmail: false)], tag: tag))], zone: zone)
        XCTAssertEqual(removal.first?["participants"]?.arrayValue?.count, 2, "\(removal)")
        assertError(try sharedModify(bob, owner: alice, [("create", record("b2", "Game"))]), 404, "ZONE_NOT_FOUND", "removed participant")
        assertError(try shared("records/lookup", bob, ["zoneID": zoneID(alice), "records": [["recordName": "g1"]]]), 404, "ZONE_NOT_FOUND")
        XCTAssertEqual(try shared("changes/database", bob, ["syncToken": .string(bobsToken)]).body["zones"]?.arrayValue,
                       [["zoneID": zoneID(alice), "deleted": true]])
        // Accepting never emptied alice's zone.
        XCTAssertEqual(Set(try fetchChanges(alice.token, zone: zone).state.compactMap { $0.value == nil ? nil : $0.key }),
                       ["g1", "b1", "cloudkit.zoneshare"])
    }

    func testUsersAreDiscoveredByEmail() throws {
        let alice = try person("alice"), bob = try person("bob")
        let found = try publicCall("users/discover", alice, ["lookupInfos": [["emailAddress": .string(bob.email.uppercased())],
                                                                             ["emailAddress": "nobody@example.com"]]])
        XCTAssertEqual(found.status, 200)
        XCTAssertEqual(found.body["users"]?.arrayValue?.map { $0["userRecordName"]?.stringValue }, [bob.recordName])
        let byEmail = try publicCall("users/lookup/email", alice, ["users": [["emailAddress": .string(bob.email)]]])
        XCTAssertEqual(byEmail.body["users"]?.arrayValue?.first?["lookupInfo"]?["emailAddress"]?.stringValue, bob.email)
        let duplicate = try DaemonProcess.run("scorebookd", ["user", "create", "other-\(UUID().uuidString.prefix(6))", "--email", bob.email]
                                                + daemon.storeArguments)
        XCTAssertNotEqual(duplicate.status, 0, "one email, one user")
    }

    func testParticipantsAndOwnerAreNotifiedOfEachOthersChanges() throws {
        let alice = try person("alice"), bob = try person("bob"), dave = try person("dave")
        try createZone(zone, alice.token)
        let saved = try modify(alice.token, [("create", share([participant(bob, "READ_WRITE"), participant(dave, "READ_ONLY")]))], zone: zone)
        let guid = try XCTUnwrap(saved.first?["shortGUID"]?.stringValue)
        for who in [bob, dave] {
            XCTAssertEqual(try publicCall("records/accept", who, ["shortGUIDs": [["value": .string(guid)]]]).status, 200)
        }
        func courier(_ who: Person) throws -> String {
            let answer = try daemon.post("/database/1/\(Self.container)/development/tokens/create", token: who.token, json: #"{"apnsEnvironment":"development"}"#)
            return try XCTUnwrap(URL(string: try XCTUnwrap(answer.body["webcourierURL"]?.stringValue))?.path)
        }
        func poll(_ who: Person, _ path: String, since: String?) throws -> (cks: [JSONValue], cursor: String) {
            let query = since.map { "?since=\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0)&timeout=2" } ?? "?timeout=0"
            let answer = try daemon.request("GET", path + query, token: who.token).parsed()
            return (answer.body["notifications"]?.arrayValue?.compactMap { $0["ck"] } ?? [], answer.body["cursor"]?.stringValue ?? "")
        }
        let alicesCourier = try courier(alice), bobsCourier = try courier(bob), davesCourier = try courier(dave)
        XCTAssertEqual(try ok("subscriptions/modify", alice.token, ["operations": [["operationType": "create", "subscription": [
            "subscriptionID": "alice-zone", "subscriptionType": "zone", "zoneID": ["zoneName": .string(zone)]]]]])["subscriptions"]?
            .arrayValue?.first?["subscriptionID"], "alice-zone")
        for who in [bob, dave] {
            let answer = try shared("subscriptions/modify", who, ["operations": [["operationType": "create", "subscription": [
                "subscriptionID": "shared-zone", "subscriptionType": "zone", "zoneID": zoneID(alice)]]]])
            XCTAssertEqual(answer.body["subscriptions"]?.arrayValue?.first?["subscriptionID"], "shared-zone", "\(answer.body)")
        }
        let aliceStart = try poll(alice, alicesCourier, since: nil).cursor
        let bobStart = try poll(bob, bobsCourier, since: nil).cursor
        let daveStart = try poll(dave, davesCourier, since: nil).cursor
        // Dave is removed before bob writes.
        let tag = try XCTUnwrap(lookup(alice.token, "cloudkit.zoneshare", zone: zone)?["recordChangeTag"]?.stringValue)
        _ = try modify(alice.token, [("update", share([participant(bob, "READ_WRITE")], tag: tag))], zone: zone)
        let aliceAfterShare = try poll(alice, alicesCourier, since: aliceStart).cursor
        let bobAfterShare = try poll(bob, bobsCourier, since: bobStart).cursor

        XCTAssertEqual(try sharedModify(bob, owner: alice, [("create", record("b1", "Game", ["name": ["value": "Bob's"]]))]).status, 200)
        let alices = try poll(alice, alicesCourier, since: aliceAfterShare).cks
        XCTAssertEqual(alices.map { $0["fet"]?["dbs"] }, [2], "the owner hears of bob's write in its private database")
        XCTAssertEqual(alices.first?["fet"]?["zoid"]?.stringValue, alice.recordName)
        let bobs = try poll(bob, bobsCourier, since: bobAfterShare).cks
        XCTAssertEqual(bobs.map { $0["fet"]?["dbs"] }, [3])
        XCTAssertEqual(bobs.first?["fet"]?["zid"]?.stringValue, zone)
        XCTAssertEqual(bobs.first?["fet"]?["zoid"]?.stringValue, alice.recordName)
        let daves = try poll(dave, davesCourier, since: daveStart).cks
        XCTAssertTrue(daves.isEmpty, "a removed participant is never notified again: \(daves)")
    }

    /// Every shared-database operation × {owner, read-write, read-only, removed, invited-not-
    /// accepted, stranger, API-token-only}: what each may read, write and be notified of.
    func testPermissionMatrixOfEverySharedDatabaseOperation() throws {
        let alice = try person("alice"), rw = try person("rw"), ro = try person("ro"), removed = try person("removed"),
            invited = try person("invited"), stranger = try person("stranger")
        try createZone(zone, alice.token)
        try modify(alice.token, [("create", record("g1", "Game", ["name": ["value": "Catan"]]))], zone: zone)
        let saved = try modify(alice.token, [("create", share([participant(rw, "READ_WRITE"), participant(ro, "READ_ONLY"),
                                                               participant(removed, "READ_WRITE"), participant(invited, "READ_ONLY")]))], zone: zone)
        let guid = try XCTUnwrap(saved.first?["shortGUID"]?.stringValue)
        for who in [rw, ro, removed] {
            XCTAssertEqual(try publicCall("records/accept", who, ["shortGUIDs": [["value": .string(guid)]]]).body["results"]?.arrayValue?.first?["participantStatus"],
                           "ACCEPTED")
        }
        // Everyone subscribes in its shared database while it can (a database subscription needs no zone).
        for who in [rw, ro, removed, invited, stranger] {
            let answer = try shared("subscriptions/modify", who, ["operations": [["operationType": "create", "subscription": [
                "subscriptionID": "everything", "subscriptionType": "database", "firesOn": ["create", "update", "delete"]]]]])
            XCTAssertEqual(answer.body["subscriptions"]?.arrayValue?.first?["subscriptionID"], "everything", "\(answer.body)")
        }
        let tag = try XCTUnwrap(lookup(alice.token, "cloudkit.zoneshare", zone: zone)?["recordChangeTag"]?.stringValue)
        _ = try modify(alice.token, [("update", share([participant(rw, "READ_WRITE"), participant(ro, "READ_ONLY"),
                                                       participant(invited, "READ_ONLY")], tag: tag))], zone: zone)

        let theZone = zoneID(alice)
        let zoneSubscription: JSONValue = ["operations": [["operationType": "create", "subscription": [
            "subscriptionID": "zone", "subscriptionType": "zone", "zoneID": theZone]]]]
        func entry(_ answer: (status: Int, body: JSONValue), _ key: String) -> JSONValue? { answer.body[key]?.arrayValue?.first }

        // Readers: the two accepted participants.
        for (who, name) in [(rw, "read-write"), (ro, "read-only")] {
            XCTAssertEqual(try shared("zones/list", who, [:]).body["zones"]?.arrayValue?.map { $0["zoneID"] }, [theZone], name)
            XCTAssertEqual(entry(try shared("zones/lookup", who, ["zones": [["zoneID": theZone]]]), "zones")?["zoneID"], theZone, name)
            XCTAssertEqual(entry(try shared("zones/modify", who, ["operations": [["operationType": "delete", "zone": ["zoneID": theZone]]]]),
                                 "zones")?["serverErrorCode"], "ACCESS_DENIED", name)
            XCTAssertEqual(try shared("changes/database", who, [:]).body["zones"]?.arrayValue, [["zoneID": theZone]], name)
            XCTAssertEqual(try shared("zones/changes", who, [:]).body["zones"]?.arrayValue?.map { $0["zoneID"] }, [theZone], name)
            XCTAssertEqual(try shared("zones/changes", who, [:]).body["zones"]?.arrayValue?.first?["atomic"], true, "a zone dictionary: \(name)")
            XCTAssertNotNil(entry(try shared("changes/zone", who, ["zones": [["zoneID": theZone]]]), "zones")?["syncToken"], name)
            XCTAssertEqual(try shared("records/changes", who, ["zoneID": theZone]).status, 200, name)
            XCTAssertEqual(entry(try shared("records/lookup", who, ["zoneID": theZone, "records": [["recordName": "g1"]]]), "records")?["recordName"],
                           "g1", name)
            XCTAssertEqual(try shared("records/query", who, ["zoneID": theZone, "query": ["recordType": "Game"]]).body["records"]?.arrayValue?.count,
                           1, name)
            XCTAssertEqual(entry(try shared("subscriptions/modify", who, zoneSubscription), "subscriptions")?["subscriptionID"], "zone", name)
            XCTAssertEqual(Set(try shared("subscriptions/list", who, [:]).body["subscriptions"]?.arrayValue?.compactMap { $0["subscriptionID"]?.stringValue } ?? []),
                           ["everything", "zone"], name)
            XCTAssertEqual(entry(try shared("subscriptions/lookup", who, ["subscriptions": [["subscriptionID": "zone"]]]), "subscriptions")?["subscriptionID"],
                           "zone", name)
        }
        XCTAssertEqual(try sharedModify(rw, owner: alice, [("create", record("rw1", "Game"))]).status, 200)
        assertError(try sharedModify(ro, owner: alice, [("create", record("ro1", "Game"))]), 403, "ACCESS_DENIED")
        // Asset uploads: the owner in its private database, a read-write participant here; not a reader.
        let upload: JSONValue = ["zoneID": theZone, "tokens": [["recordName": "p1", "recordType": "Person", "fieldName": "avatar"]]]
        XCTAssertEqual(try call("assets/upload", alice.token, ["zoneID": ["zoneName": .string(zone)], "tokens": upload["tokens"]!]).status, 200)
        XCTAssertNotNil(entry(try shared("assets/upload", rw, upload), "tokens")?["url"]?.stringValue)
        assertError(try shared("assets/upload", ro, upload), 403, "ACCESS_DENIED")

        // Removed, invited-not-accepted, stranger: the zone does not exist for them.
        for (who, name) in [(removed, "removed"), (invited, "invited"), (stranger, "stranger")] {
            XCTAssertEqual(try shared("zones/list", who, [:]).body["zones"]?.arrayValue, [], name)
            XCTAssertEqual(entry(try shared("zones/lookup", who, ["zones": [["zoneID": theZone]]]), "zones")?["serverErrorCode"], "ZONE_NOT_FOUND", name)
            XCTAssertEqual(entry(try shared("zones/modify", who, ["operations": [["operationType": "delete", "zone": ["zoneID": theZone]]]]),
                                 "zones")?["serverErrorCode"], "ZONE_NOT_FOUND", name)
            XCTAssertFalse(try shared("changes/database", who, [:]).body["zones"]?.arrayValue?.contains { $0["zoneID"] == theZone && $0["deleted"] == nil } ?? true, name)
            XCTAssertEqual(entry(try shared("changes/zone", who, ["zones": [["zoneID": theZone]]]), "zones")?["serverErrorCode"], "ZONE_NOT_FOUND", name)
            assertError(try shared("records/changes", who, ["zoneID": theZone]), 404, "ZONE_NOT_FOUND", name)
            assertError(try shared("records/lookup", who, ["zoneID": theZone, "records": [["recordName": "g1"]]]), 404, "ZONE_NOT_FOUND", name)
            assertError(try shared("records/query", who, ["zoneID": theZone, "query": ["recordType": "Game"]]), 404, "ZONE_NOT_FOUND", name)
            assertError(try shared("assets/upload", who, ["zoneID": theZone, "tokens": [["recordName": "p1", "fieldName": "avatar"]]]), 404,
                        "ZONE_NOT_FOUND", name)
            assertError(try sharedModify(who, owner: alice, [("create", record("x-\(name)", "Game"))]), 404, "ZONE_NOT_FOUND", name)
            assertError(try sharedModify(who, owner: alice, [("forceDelete", record("cloudkit.zoneshare"))]), 404, "ZONE_NOT_FOUND", name)
            XCTAssertEqual(entry(try shared("subscriptions/modify", who, zoneSubscription), "subscriptions")?["serverErrorCode"], "ZONE_NOT_FOUND", name)
            XCTAssertEqual(try shared("subscriptions/list", who, [:]).body["subscriptions"]?.arrayValue?.compactMap { $0["subscriptionID"]?.stringValue },
                           ["everything"], name)
            XCTAssertNil(try lookup(alice.token, "x-\(name)", zone: zone), name)
        }

        // API token only (no user): nothing at all.
        let apiToken = try daemon.createAPIToken()
        for operation in ["zones/list", "records/lookup", "invitations/list"] {
            let answer = try daemon.request("POST", path(operation, database: "shared") + "?ckAPIToken=\(apiToken)",
                                            body: Array(#"{"zoneID": {"zoneName": "Friday"}, "records": []}"#.utf8)).parsed()
            assertError(answer, 421, "AUTHENTICATION_REQUIRED", "API token only: \(operation)")
        }
        let resolved = try daemon.request("POST", path("records/resolve", database: "public") + "?ckAPIToken=\(apiToken)",
                                          body: Array(#"{"shortGUIDs": [{"value": "\#(guid)"}]}"#.utf8)).parsed()
        assertError(resolved, 421, "AUTHENTICATION_REQUIRED", "API token only: resolve")

        // The owner: everything in its private database, and it sees the read-write participant's write.
        XCTAssertEqual(try lookup(alice.token, "rw1", zone: zone)?["created"]?["userRecordName"]?.stringValue, rw.recordName)
        XCTAssertNil(try lookup(alice.token, "ro1", zone: zone))

        // Notifications of a change by the owner: only the two accepted participants.
        var couriers: [String: (path: String, cursor: String)] = [:]
        for who in [rw, ro, removed, invited, stranger] {
            let answer = try daemon.post("/database/1/\(Self.container)/development/tokens/create", token: who.token, json: #"{"apnsEnvironment":"development"}"#)
            let courier = try XCTUnwrap(URL(string: try XCTUnwrap(answer.body["webcourierURL"]?.stringValue))?.path)
            let start = try daemon.request("GET", courier + "?since=&timeout=0", token: who.token).parsed().body["cursor"]?.stringValue ?? ""
            couriers[who.recordName] = (courier, start)
        }
        try modify(alice.token, [("create", record("late", "Game"))], zone: zone)
        for (who, expected) in [(rw, 2), (ro, 2), (removed, 0), (invited, 0), (stranger, 0)] {
            let (courier, cursor) = couriers[who.recordName]!
            let since = cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? cursor
            let answer = try daemon.request("GET", courier + "?since=\(since)&timeout=\(expected > 0 ? 3 : 1)", token: who.token).parsed()
            var notes = answer.body["notifications"]?.arrayValue ?? []
            if notes.count < expected, let next = answer.body["cursor"]?.stringValue {
                let more = try daemon.request("GET", courier + "?since=\(next.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? next)&timeout=2",
                                              token: who.token).parsed()
                notes += more.body["notifications"]?.arrayValue ?? []
            }
            XCTAssertEqual(notes.count, expected, "notifications of \(who.email): \(notes)")
            XCTAssertTrue(notes.allSatisfy { ($0["ck"]?["met"]?["dbs"] ?? $0["ck"]?["fet"]?["dbs"]) == 3 }, "\(notes)")
        }
    }

    /// A participant's long-poll that is already waiting is woken by the owner's write (the push
    /// hub is told of the participant's outbox, not only the owner's), well before its timeout.
    func testAWaitingParticipantIsWokenByTheOwnersWrite() throws {
        let alice = try person("alice"), bob = try person("bob")
        try createZone(zone, alice.token)
        let saved = try modify(alice.token, [("create", share([participant(bob, "READ_ONLY")]))], zone: zone)
        let guid = try XCTUnwrap(saved.first?["shortGUID"]?.stringValue)
        XCTAssertEqual(try publicCall("records/accept", bob, ["shortGUIDs": [["value": .string(guid)]]]).status, 200)
        XCTAssertEqual(try shared("subscriptions/modify", bob, ["operations": [["operationType": "create", "subscription": [
            "subscriptionID": "zone", "subscriptionType": "zone", "zoneID": zoneID(alice)]]]]).status, 200)
        let channel = try daemon.post("/database/1/\(Self.container)/development/tokens/create", token: bob.token, json: #"{"apnsEnvironment":"development"}"#)
        let courier = try XCTUnwrap(URL(string: try XCTUnwrap(channel.body["webcourierURL"]?.stringValue))?.path)
        let cursor = try XCTUnwrap(daemon.request("GET", courier + "?since=&timeout=0", token: bob.token).parsed().body["cursor"]?.stringValue)
        let since = cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? cursor

        let done = DispatchSemaphore(value: 0)
        let result = LockedResult()
        let port = try daemon.port
        let token = bob.token
        Thread {
            let started = Date()
            let answer = try? RawHTTP.send(port: port, method: "GET", path: courier + "?since=\(since)&timeout=30",
                                           headers: [("Authorization", "Bearer \(token)")], body: [], timeout: 40).parsed()
            result.set(answer?.body, Date().timeIntervalSince(started))
            done.signal()
        }.start()
        Thread.sleep(forTimeInterval: 0.5)  // the poll is waiting
        try modify(alice.token, [("create", record("g1", "Game", ["name": ["value": "Catan"]]))], zone: zone)
        XCTAssertEqual(done.wait(timeout: .now() + 40), .success)
        let (body, elapsed) = result.get()
        XCTAssertLessThan(elapsed, 10, "woken by the write, not by the 30 s timeout")
        XCTAssertEqual(body?["notifications"]?.arrayValue?.first?["ck"]?["fet"]?["sid"], "zone", "\(String(describing: body))")
    }
}

/// A value handed from a background thread to the test.
final class LockedResult: Sendable {
    private let result = Mutex<(body: JSONValue?, elapsed: TimeInterval)>((nil, .infinity))

    func set(_ body: JSONValue?, _ elapsed: TimeInterval) { result.withLock { $0 = (body, elapsed) } }

    func get() -> (JSONValue?, TimeInterval) { result.withLock { $0 } }
}
