import Foundation
import RecordModel
import XCTest

/// Authentication and the wall between users' private databases, over HTTP.
final class APIAuthenticationTests: DaemonTestCase {
    func testABearerTokenIdentifiesTheUser() throws {
        let (recordName, token) = try makeUser()
        for operation in ["users/current", "users/caller"] {
            let answer = try daemon.get(path(operation), token: token)
            XCTAssertEqual(answer.status, 200, operation)
            XCTAssertEqual(answer.body, ["userRecordName": .string(recordName)], operation)
        }
        let underPublic = try daemon.get(path("users/current", database: "public"), token: token)
        XCTAssertEqual(underPublic.body["userRecordName"]?.stringValue, recordName, "users/current answers under any database")
        // The scheme's name in any case, spaces and tabs around the token (HTTP's optional whitespace).
        for header in ["bearer \(token)", "BEARER \t \(token) \t"] {
            let answer = try daemon.request("GET", path("users/current"), headers: [("Authorization", header)]).parsed()
            XCTAssertEqual(answer.status, 200, header.debugDescription)
            XCTAssertEqual(answer.body["userRecordName"]?.stringValue, recordName, header.debugDescription)
        }
    }

    func testCloudKitStyleQueryParametersAuthenticate() throws {
        let (recordName, token) = try makeUser()
        let apiToken = try daemon.createAPIToken()
        let query = "ckAPIToken=\(percentEncodeEverything(apiToken))&ckWebAuthToken=\(percentEncodeEverything(token))"
        let answer = try daemon.request("GET", path("users/current") + "?" + query).parsed()
        XCTAssertEqual(answer.status, 200, answer.body.serializedString())
        XCTAssertEqual(answer.body["userRecordName"]?.stringValue, recordName)

        let modify = try daemon.request("POST", path("records/modify") + "?" + query,
                                        body: Array(#"{"operations":[{"operationType":"create","record":{"recordName":"viaQuery","recordType":"Thing"}}]}"#.utf8)).parsed()
        XCTAssertEqual(modify.status, 200, modify.body.serializedString())
        XCTAssertNotNil(try lookup(token, "viaQuery", zone: ZoneID.defaultZoneName), "the query-authenticated write is the user's")
    }

    func testMissingCredentialsAre421AndWrongOnesAre401() throws {
        let (_, token) = try makeUser()
        let apiToken = try daemon.createAPIToken()
        let target = path("zones/list")

        assertError(try daemon.request("POST", target, body: Array("{}".utf8)).parsed(), 421, "AUTHENTICATION_REQUIRED", "no credentials")
        assertError(try daemon.request("GET", target + "?ckAPIToken=\(apiToken)").parsed(), 421, "AUTHENTICATION_REQUIRED",
                    "an API token alone")
        assertError(try daemon.get(target, token: "0123456789abcdef"), 401, "AUTHENTICATION_FAILED", "unknown bearer token")
        assertError(try daemon.get(target, token: token + "0"), 401, "AUTHENTICATION_FAILED", "a token with one more character")
        assertError(try daemon.get(target, token: String(repeating: "a", count: 20_000)), 401, "AUTHENTICATION_FAILED", "a long token")
        assertError(try daemon.request("GET", target, headers: [("Authorization", "Basic YWxpY2U6cHc=")]).parsed(), 401,
                    "AUTHENTICATION_FAILED", "another scheme")
        assertError(try daemon.request("GET", target, headers: [("Authorization", "Bearer")]).parsed(), 401, "AUTHENTICATION_FAILED",
                    "an empty bearer")
        assertError(try daemon.request("GET", target + "?ckAPIToken=\(String(repeating: "0", count: 64))&ckWebAuthToken=\(token)").parsed(),
                    401, "AUTHENTICATION_FAILED", "an unknown API token")
        assertError(try daemon.request("GET", target + "?ckAPIToken=\(apiToken)&ckWebAuthToken=nope").parsed(), 401,
                    "AUTHENTICATION_FAILED", "an unknown web auth token")
        assertError(try daemon.request("GET", target + "?ckAPIToken=%ZZ&ckWebAuthToken=%").parsed(), 401, "AUTHENTICATION_FAILED",
                    "undecodable parameters")
        try assertHealthy()
    }

    /// A batch's body is read while its token is checked (`RecordAPI.answer`): the credentials'
    /// answer still comes first, whatever the body, and a good token with a broken body is the
    /// body's error. A token revoked a moment ago (after a batch that had it cached) is refused
    /// even for a well-formed batch, and nothing of that batch is written.
    func testABatchIsRefusedForItsCredentialsBeforeItsBody() throws {
        let name = "batch-\(UUID().uuidString.prefix(8).lowercased())"
        let (_, token) = try daemon.createUserInfo(name)
        let target = path("records/modify")
        let broken = Array(#"{"operations":[{"operationType":"create","record":{"recordName":"#.utf8)
        func post(_ body: [UInt8], token: String?) throws -> (status: Int, body: JSONValue) {
            try daemon.request("POST", target, headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [], body: body).parsed()
        }
        func create(_ recordName: String) -> [UInt8] {
            Array(#"{"operations":[{"operationType":"create","record":{"recordName":"\#(recordName)","recordType":"Thing"}}]}"#.utf8)
        }
        assertError(try post(broken, token: nil), 421, "AUTHENTICATION_REQUIRED", "no credentials, broken body")
        assertError(try post(broken, token: "0123456789abcdef"), 401, "AUTHENTICATION_FAILED", "unknown token, broken body")
        assertError(try post(broken, token: token), 400, "BAD_REQUEST", "good token, broken body")
        assertError(try post(Array(#"{"operations":"no"}"#.utf8), token: token), 400, "BAD_REQUEST", "good token, operations not an array")

        let issued = try DaemonProcess.run("scorebookd", ["user", "token", name] + daemon.storeArguments)
        let second = try XCTUnwrap(try JSONValue.parse(issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["token"]?.stringValue)
        XCTAssertEqual(try post(create("early"), token: token).status, 200)
        let revoke = try DaemonProcess.run("scorebookd", ["user", "revoke", name, "--token", token] + daemon.storeArguments)
        XCTAssertEqual(revoke.status, 0, revoke.stderr)
        assertError(try post(create("late"), token: token), 401, "AUTHENTICATION_FAILED", "revoked token, well-formed batch")
        XCTAssertNotNil(try lookup(second, "early", zone: ZoneID.defaultZoneName))
        XCTAssertNil(try lookup(second, "late", zone: ZoneID.defaultZoneName), "nothing of the refused batch was written")
        try assertHealthy()
    }

    func testOneUserCannotSeeAnothersZonesRecordsOrChanges() throws {
        let (_, ann) = try makeUser("ann")
        let (_, bob) = try makeUser("bob")
        try createZone("ScorebookData", ann)
        try createZone("AnnOnly", ann)
        try modify(ann, [("create", record("Game|~|secret", "Game", ["name": ["value": "Ann's game"]]))])
        try modify(ann, [("create", record("default-secret", "Game"))], zone: nil)

        let zones = try ok("zones/list", bob)["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue }
        XCTAssertEqual(zones, [ZoneID.defaultZoneName], "Bob sees only his own default zone")
        let lookupZone = try ok("zones/lookup", bob, ["zones": [["zoneName": "AnnOnly"]]])
        XCTAssertEqual(lookupZone["zones"]?.arrayValue?.first?["serverErrorCode"], "ZONE_NOT_FOUND")
        assertError(try call("records/lookup", bob, ["zoneID": ["zoneName": "ScorebookData"], "records": [["recordName": "Game|~|secret"]]]),
                    404, "ZONE_NOT_FOUND", "lookup in Ann's zone")
        assertError(try call("records/changes", bob, ["zoneID": ["zoneName": "ScorebookData"]]), 404, "ZONE_NOT_FOUND", "Ann's zone feed")
        assertError(try call("records/query", bob, ["zoneID": ["zoneName": "ScorebookData"], "query": ["recordType": "Game"]]), 404,
                    "ZONE_NOT_FOUND", "query in Ann's zone")
        let defaultLookup = try ok("records/modify", bob, modifyBody([("forceUpdate", record("bob-first", "Thing"))], zone: nil))
        XCTAssertNotNil(defaultLookup["records"]?.arrayValue?.first?["recordChangeTag"])
        let bobDefault = try ok("records/lookup", bob, ["records": [["recordName": "default-secret"]]])
        XCTAssertEqual(bobDefault["records"]?.arrayValue?.first?["serverErrorCode"], "NOT_FOUND", "Ann's default zone is not Bob's")
        let databaseChanges = try ok("changes/database", bob)["zones"]?.arrayValue ?? []
        XCTAssertFalse(databaseChanges.contains { $0["zoneID"]?["zoneName"]?.stringValue == "AnnOnly" })
        let zoneChanges = try ok("changes/zone", bob, ["zones": [["zoneID": ["zoneName": "ScorebookData"]]]])
        XCTAssertEqual(zoneChanges["zones"]?.arrayValue?.first?["serverErrorCode"], "ZONE_NOT_FOUND")

        // Bob's own zone of the same name is a different zone: empty, and his writes leave Ann's alone.
        try createZone("ScorebookData", bob)
        XCTAssertTrue(try fetchChanges(bob).state.isEmpty)
        try modify(bob, [("forceDelete", record("Game|~|secret"))])
        try modify(bob, [("forceUpdate", record("Game|~|secret", "Game", ["name": ["value": "Bob's"]]))])
        let annCopy = try XCTUnwrap(try lookup(ann, "Game|~|secret"))
        XCTAssertEqual(annCopy["fields"]?["name"]?["value"], "Ann's game")
        XCTAssertEqual(try fetchChanges(ann).state.count, 1, "Ann's feed shows none of Bob's writes")
    }

    func testNamingAnotherUsersZoneOwnerReachesOnlyOnesOwnDatabase() throws {
        let (_, ann) = try makeUser("ann")
        let (bobRecordName, bob) = try makeUser("bob")
        try createZone("BobOnly", bob)
        try modify(bob, [("create", record("diary", "Diary", ["text": ["value": "Bob's"]]))], zone: "BobOnly")
        let bobToken = try fetchChanges(bob, zone: "BobOnly").syncToken

        let foreignZone: JSONValue = ["zoneName": "BobOnly", "ownerRecordName": .string(bobRecordName)]
        let write: JSONValue = ["zoneID": foreignZone, "operations": [["operationType": "forceDelete", "record": ["recordName": "diary"]]]]
        assertError(try call("records/modify", ann, write), 404, "ZONE_NOT_FOUND", "Ann writing to Bob's zone by owner name")
        assertError(try call("records/lookup", ann, ["zoneID": foreignZone, "records": [["recordName": "diary"]]]), 404, "ZONE_NOT_FOUND",
                    "Ann reading Bob's zone by owner name")
        let deleteZone: JSONValue = ["operations": [["operationType": "delete", "zone": ["zoneID": foreignZone]]]]
        XCTAssertEqual(try ok("zones/modify", ann, deleteZone)["zones"]?.arrayValue?.first?["serverErrorCode"], "ZONE_NOT_FOUND")

        XCTAssertNotNil(try lookup(bob, "diary", zone: "BobOnly"), "Bob's record is untouched")
        XCTAssertTrue(try fetchChanges(bob, zone: "BobOnly", from: bobToken).state.isEmpty, "and so is his feed")
    }

    func testASyncTokenOfAnotherUserIsBadRequest() throws {
        let (_, ann) = try makeUser("ann")
        let (_, bob) = try makeUser("bob")
        try createZone("ScorebookData", ann)
        try createZone("ScorebookData", bob)
        try modify(ann, [("create", record("a", "Thing"))])
        let annToken = try fetchChanges(ann).syncToken
        assertError(try call("records/changes", bob, ["zoneID": ["zoneName": "ScorebookData"], "syncToken": .string(annToken)]), 400,
                    "BAD_REQUEST", "Ann's zone token in Bob's zone")
        let perZone = try ok("changes/zone", bob, ["zones": [["zoneID": ["zoneName": "ScorebookData"], "syncToken": .string(annToken)]]])
        XCTAssertEqual(perZone["zones"]?.arrayValue?.first?["serverErrorCode"], "BAD_REQUEST")
        let annDatabaseToken = try XCTUnwrap(try ok("changes/database", ann)["syncToken"]?.stringValue)
        assertError(try call("changes/database", bob, ["syncToken": .string(annDatabaseToken)]), 400, "BAD_REQUEST", "Ann's database token")
        XCTAssertEqual(try fetchChanges(ann, from: annToken).state.count, 0, "the token still works for Ann")
    }

    func percentEncodeEverything(_ text: String) -> String {
        text.utf8.map { String(format: "%%%02X", $0) }.joined()
    }
}
