import Foundation
import RecordModel
import XCTest

/// The public database and server-to-server keys over HTTP against the real daemon: API-token-only reads, creator-only changes, `_defaultZone` only, its change feed
/// and subscription push, and requests signed by `openssl` itself with a key `scorebookd key add`
/// registered.
class PublicDatabaseAPITests: DaemonTestCase {
    func publicPath(_ operation: String, container: String = DaemonTestCase.container) -> String {
        path(operation, database: "public", container: container)
    }

    func callPublic(_ operation: String, _ token: String?, _ body: JSONValue = [:], query: String = "") throws -> (status: Int, body: JSONValue) {
        try daemon.request("POST", publicPath(operation) + query, token: token, body: Array(body.serializedString().utf8)).parsed()
    }

    func catalogGame(_ name: String, _ title: String, tag: String? = nil) -> JSONValue {
        record(name, "CatalogGame", ["name": ["value": .string(title)], "lowScoreWins": ["value": 1]], tag: tag)
    }

    func uniqueName(_ prefix: String) -> String { "\(prefix)-\(UUID().uuidString.prefix(8))" }

    func publicModify(_ token: String, _ operations: [(String, JSONValue)], file: StaticString = #filePath, line: UInt = #line) throws
        -> (status: Int, body: JSONValue)
    {
        try callPublic("records/modify", token, modifyBody(operations, zone: "_defaultZone"))
    }

    func testAnAPITokenAloneReadsAndQueriesButDoesNotWrite() throws {
        let alice = try makeUser("alice")
        let name = uniqueName("catan")
        let created = try publicModify(alice.token, [("create", catalogGame(name, "Catan"))])
        XCTAssertEqual(created.status, 200)
        let saved = created.body["records"]?.arrayValue?.first
        XCTAssertEqual(saved?["created"]?["userRecordName"]?.stringValue, alice.userRecordName)
        XCTAssertEqual(saved?["zoneID"]?["ownerRecordName"]?.stringValue, "__defaultOwner__")

        let apiToken = try daemon.createAPIToken()
        let readOnly = "?ckAPIToken=\(apiToken)"
        let looked = try callPublic("records/lookup", nil, ["records": [["recordName": .string(name)]]], query: readOnly)
        XCTAssertEqual(looked.status, 200, looked.body.serializedString())
        XCTAssertEqual(looked.body["records"]?.arrayValue?.first?["fields"]?["name"]?["value"]?.stringValue, "Catan")
        let queried = try callPublic("records/query", nil, ["query": ["recordType": "CatalogGame",
            "filterBy": [["fieldName": "name", "comparator": "EQUALS", "fieldValue": ["value": "Catan"]]]]], query: readOnly)
        XCTAssertEqual(queried.status, 200, queried.body.serializedString())
        XCTAssertTrue(queried.body["records"]?.arrayValue?.contains { $0["recordName"]?.stringValue == name } ?? false)
        XCTAssertEqual(try callPublic("zones/list", nil, query: readOnly).body["zones"]?.arrayValue?.count, 1)

        assertError(try callPublic("records/modify", nil, modifyBody([("create", catalogGame(uniqueName("x"), "X"))], zone: "_defaultZone"),
                                   query: readOnly), 421, "AUTHENTICATION_REQUIRED", "an API token alone cannot write")
        assertError(try callPublic("subscriptions/modify", nil, ["operations": []], query: readOnly), 421, "AUTHENTICATION_REQUIRED")
        assertError(try callPublic("records/lookup", nil, ["records": [["recordName": .string(name)]]]), 421, "AUTHENTICATION_REQUIRED")
        assertError(try callPublic("records/lookup", nil, ["records": [["recordName": .string(name)]]],
                                   query: "?ckAPIToken=\(String(repeating: "ab", count: 32))"), 401, "AUTHENTICATION_FAILED")
        // The private database still needs a user.
        assertError(try daemon.request("POST", path("records/lookup") + readOnly, body: Array(#"{"records":[]}"#.utf8)).parsed(),
                    421, "AUTHENTICATION_REQUIRED")
    }

    func testOnlyTheCreatorUpdatesOrDeletes() throws {
        let alice = try makeUser("alice"), bob = try makeUser("bob")
        let name = uniqueName("azul")
        let saved = try publicModify(alice.token, [("create", catalogGame(name, "Azul"))]).body["records"]?.arrayValue?.first
        let tag = try XCTUnwrap(saved?["recordChangeTag"]?.stringValue)
        assertError(try publicModify(bob.token, [("update", catalogGame(name, "Bob's Azul", tag: tag))]), 403, "ACCESS_DENIED")
        assertError(try publicModify(bob.token, [("forceDelete", record(name))]), 403, "ACCESS_DENIED")
        let read = try callPublic("records/lookup", bob.token, ["records": [["recordName": .string(name)]]])
        XCTAssertEqual(read.body["records"]?.arrayValue?.first?["fields"]?["name"]?["value"]?.stringValue, "Azul", "bob reads it unchanged")
        let updated = try publicModify(alice.token, [("update", catalogGame(name, "Azul 2", tag: tag))])
        XCTAssertEqual(updated.body["records"]?.arrayValue?.first?["fields"]?["name"]?["value"]?.stringValue, "Azul 2")
        let deleted = try publicModify(alice.token, [("forceDelete", record(name))])
        XCTAssertEqual(deleted.body["records"]?.arrayValue?.first?["deleted"]?.boolValue, true)
    }

    func testOnlyTheDefaultZone() throws {
        let alice = try makeUser("alice")
        let answer = try callPublic("zones/modify", alice.token, ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Games"]]]]])
        assertError(answer, 400, "BAD_REQUEST")
        let zones = try callPublic("zones/list", alice.token).body["zones"]?.arrayValue ?? []
        XCTAssertEqual(zones.map { $0["zoneID"]?["zoneName"]?.stringValue }, ["_defaultZone"])
    }

    func testPublicChangeFeedAndSubscriptionPush() throws {
        let alice = try makeUser("alice"), bob = try makeUser("bob")
        let feedStart = try callPublic("records/changes", bob.token, ["zoneID": ["zoneName": "_defaultZone"]])
        XCTAssertEqual(feedStart.status, 200, feedStart.body.serializedString())
        var syncToken = try XCTUnwrap(feedStart.body["syncToken"]?.stringValue)
        for _ in 0..<100 where feedStart.body["moreComing"]?.boolValue == true {
            let page = try callPublic("records/changes", bob.token, ["zoneID": ["zoneName": "_defaultZone"], "syncToken": .string(syncToken)])
            syncToken = try XCTUnwrap(page.body["syncToken"]?.stringValue)
            if page.body["moreComing"]?.boolValue != true { break }
        }
        // Bob's channel and his subscription to the public catalogue.
        let channel = try daemon.post("/device/1/\(Self.container)/development/tokens/create", token: bob.token,
                                      json: #"{"apnsEnvironment": "development"}"#)
        let courier = try XCTUnwrap(URL(string: channel.body["webcourierURL"]?.stringValue ?? "")?.path)
        let start = try daemon.request("GET", courier + "?since=&timeout=0", token: bob.token).parsed()
        let cursor = try XCTUnwrap(start.body["cursor"]?.stringValue)
        let subscriptionID = uniqueName("catalog")
        let subscribed = try callPublic("subscriptions/modify", bob.token, ["operations": [["operationType": "create", "subscription": [
            "subscriptionID": .string(subscriptionID), "subscriptionType": "query", "zoneID": ["zoneName": "_defaultZone"],
            "query": ["recordType": "CatalogGame"], "firesOn": ["create", "update", "delete"],
            "notificationInfo": ["desiredKeys": ["name"]]]]]])
        XCTAssertEqual(subscribed.status, 200, subscribed.body.serializedString())
        XCTAssertNil(subscribed.body["subscriptions"]?.arrayValue?.first?["serverErrorCode"], subscribed.body.serializedString())
        let listed = try callPublic("subscriptions/list", bob.token).body["subscriptions"]?.arrayValue ?? []
        XCTAssertEqual(listed.compactMap { $0["subscriptionID"]?.stringValue }, [subscriptionID])
        XCTAssertTrue((try callPublic("subscriptions/list", alice.token).body["subscriptions"]?.arrayValue ?? []).isEmpty,
                      "alice does not see bob's subscription")

        let name = uniqueName("carcassonne")
        XCTAssertEqual(try publicModify(alice.token, [("create", catalogGame(name, "Carcassonne"))]).status, 200)
        let polled = try daemon.request("GET", courier + "?since=\(cursor)&timeout=10", token: bob.token, timeout: 30).parsed()
        let notification = try XCTUnwrap(polled.body["notifications"]?.arrayValue?.first?["ck"]?["qry"], polled.body.serializedString())
        XCTAssertEqual(notification["rid"]?.stringValue, name)
        XCTAssertEqual(notification["sid"]?.stringValue, subscriptionID)
        XCTAssertEqual(notification["dbs"]?.int64Value, 1, "dbs 1 is the public database")
        XCTAssertEqual(notification["af"]?["name"]?.stringValue, "Carcassonne")

        let changes = try callPublic("changes/zone", bob.token, ["zones": [["zoneID": ["zoneName": "_defaultZone"], "syncToken": .string(syncToken)]]])
        XCTAssertEqual(changes.status, 200, changes.body.serializedString())
        let changed = changes.body["zones"]?.arrayValue?.first?["records"]?.arrayValue ?? []
        XCTAssertTrue(changed.contains { $0["recordName"]?.stringValue == name }, changes.body.serializedString())
    }
}
