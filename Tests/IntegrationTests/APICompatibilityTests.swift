import Foundation
import RecordModel
import XCTest

/// What existing CloudKit Web Services clients need beyond the documented API,
/// over HTTP against the real daemon.
final class APICompatibilityTests: DaemonTestCase {
    /// `/device/1/{container}/{environment}/tokens/{operation}`.
    func devicePath(_ operation: String, environment: String = "development") -> String {
        "/device/1/\(DaemonTestCase.container)/\(environment)/tokens/\(operation)"
    }

    /// `/database/1/{container}/{environment}/tokens/{operation}`.
    func databaseTokensPath(_ operation: String) -> String {
        "/database/1/\(DaemonTestCase.container)/development/tokens/\(operation)"
    }

    // MARK: zones/changes and metaSyncToken

    func testZonesChangesTakesAndAnswersMetaSyncToken() throws {
        let (_, token) = try makeUser("meta")
        try createZone("First", token)
        let start = try ok("zones/changes", token)
        let startToken = try XCTUnwrap(start["metaSyncToken"]?.stringValue, "zones/changes answers metaSyncToken: \(start)")
        XCTAssertEqual(start["syncToken"]?.stringValue, startToken, "and syncToken, the same token")
        XCTAssertNil(try ok("changes/database", token)["metaSyncToken"], "changes/database answers syncToken only, as in CloudKit")

        try createZone("Second", token)
        func changedZones(_ body: JSONValue) throws -> Set<String> {
            Set(try ok("zones/changes", token, body)["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue } ?? [])
        }
        XCTAssertEqual(try changedZones(["metaSyncToken": .string(startToken)]), ["Second"], "metaSyncToken is where the feed resumes")
        XCTAssertEqual(try changedZones(["syncToken": .string(startToken)]), ["Second"], "syncToken still works")
        XCTAssertEqual(try changedZones(["metaSyncToken": .string(startToken), "syncToken": "not a token"]), ["Second"],
                       "metaSyncToken wins over syncToken, as on the live service")
        assertError(try call("zones/changes", token, ["metaSyncToken": "not a token"]), 400, "BAD_REQUEST", "a bad metaSyncToken")

        // A client that follows only metaSyncToken, one zone per page, gets to the end.
        for index in 0..<4 { try createZone("Paged\(index)", token) }
        var next: String? = startToken
        var seen: Set<String> = []
        var pages = 0
        while pages < 50 {
            pages += 1
            var body: [String: JSONValue] = ["resultsLimit": 1]
            if let next { body["metaSyncToken"] = .string(next) }
            let page = try ok("zones/changes", token, .object(body))
            seen.formUnion(page["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue } ?? [])
            next = try XCTUnwrap(page["metaSyncToken"]?.stringValue)
            if page["moreComing"] != true { break }
        }
        XCTAssertLessThan(pages, 50, "following metaSyncToken ends")
        XCTAssertEqual(seen, ["Second", "Paged0", "Paged1", "Paged2", "Paged3"])
    }

    // MARK: push-token paths

    func testPushTokensUnderDeviceAndDatabasePaths() throws {
        let (_, token) = try makeUser("device")
        let (_, other) = try makeUser("device")
        func post(_ path: String, _ body: JSONValue, as caller: String? = nil) throws -> (status: Int, body: JSONValue) {
            try daemon.post(path, token: caller ?? token, json: body.serializedString())
        }

        let created = try post(devicePath("create"), ["apnsEnvironment": "development"])
        XCTAssertEqual(created.status, 200, "tokens/create under /device/1/: \(created.body)")
        let apnsToken = try XCTUnwrap(created.body["apnsToken"]?.stringValue)
        let courierURL = try XCTUnwrap(created.body["webcourierURL"]?.stringValue)
        XCTAssertEqual(created.body["apnsEnvironment"], "development")
        XCTAssertTrue(courierURL.contains("/database/1/\(DaemonTestCase.container)/development/courier/\(apnsToken)"), courierURL)

        let alias = try post(databaseTokensPath("create"), ["apnsEnvironment": "production"])
        XCTAssertEqual(alias.status, 200, "the /database/1/ path stays an alias: \(alias.body)")
        XCTAssertEqual(alias.body["apnsEnvironment"], "production")
        XCTAssertNotEqual(alias.body["apnsToken"], created.body["apnsToken"], "each call is a new channel")

        for path in [devicePath("register"), databaseTokensPath("register")] {
            let registered = try post(path, ["apnsEnvironment": "development", "apnsToken": .string(apnsToken)])
            XCTAssertEqual(registered.status, 200, "\(path): \(registered.body)")
            XCTAssertEqual(registered.body["apnsToken"]?.stringValue, apnsToken, path)
            XCTAssertEqual(registered.body["webcourierURL"]?.stringValue, courierURL, "\(path) answers the channel's courier URL")
            XCTAssertEqual(registered.body["apnsEnvironment"], "development", path)
        }
        assertError(try post(devicePath("register"), ["apnsEnvironment": "development", "apnsToken": .string(String(repeating: "ab", count: 32))]),
                    404, "NOT_FOUND", "a token this daemon never made")
        assertError(try post(devicePath("register"), ["apnsEnvironment": "development", "apnsToken": .string(apnsToken)], as: other),
                    403, "ACCESS_DENIED", "another user's token")
        assertError(try post(devicePath("register"), ["apnsEnvironment": "development"]), 400, "BAD_REQUEST", "no apnsToken")
        assertError(try post(devicePath("register"), ["apnsEnvironment": "sandbox", "apnsToken": .string(apnsToken)]), 400, "BAD_REQUEST",
                    "an unknown apnsEnvironment")
        assertError(try post(devicePath("create"), ["apnsEnvironment": "sandbox"]), 400, "BAD_REQUEST", "an unknown apnsEnvironment")
        assertError(try post(devicePath("delete"), [:]), 404, "NOT_FOUND", "an unknown tokens operation")
        assertError(try daemon.post(devicePath("create"), token: nil, json: "{}"), 421, "AUTHENTICATION_REQUIRED", "no credentials")
        assertError(try post("/device/1/\(DaemonTestCase.container)/development/private/records/lookup", ["records": []]), 404, "NOT_FOUND",
                    "/device/1/ serves the token operations only")

        // CloudKit JS calls the device path with ckAPIToken and ckWebAuthToken.
        let apiToken = try daemon.createAPIToken()
        let byQuery = try daemon.request("POST", devicePath("create") + "?ckAPIToken=\(apiToken)&ckWebAuthToken=\(token)",
                                         body: Array(#"{"apnsEnvironment":"development"}"#.utf8)).parsed()
        XCTAssertEqual(byQuery.status, 200, byQuery.body.serializedString())

        // A channel made under /device/1/ delivers: a zone subscription fires through it.
        try createZone("ScorebookData", token)
        let subscribed = try ok("subscriptions/modify", token, ["operations": [["operationType": "create", "subscription": [
            "subscriptionID": "device-path", "subscriptionType": "zone", "zoneID": ["zoneName": "ScorebookData"],
        ]]]])
        XCTAssertNil(subscribed["subscriptions"]?.arrayValue?.first?["serverErrorCode"], subscribed.serializedString())
        try modify(token, [("create", record("Game|~|1", "Game"))])
        let courierPath = try XCTUnwrap(URLComponents(string: courierURL)?.path)
        let delivered = try daemon.get(courierPath + "?timeout=10", token: token)
        XCTAssertEqual(delivered.status, 200, delivered.body.serializedString())
        XCTAssertEqual(delivered.body["ck"]?["fet"]?["sid"], "device-path",
                       "the zone subscription's notification arrives on the channel, bare as CloudKit JS reads it")
    }

    // MARK: X-Apple-CloudKit-Web-Auth-Token

    func testWebAuthTokenIsEchoedOnCkWebAuthTokenRequests() throws {
        let (_, token) = try makeUser("echo")
        let apiToken = try daemon.createAPIToken()
        let credentials = "?ckAPIToken=\(apiToken)&ckWebAuthToken=\(token)"
        let header = "x-apple-cloudkit-web-auth-token"

        let current = try daemon.request("GET", path("users/current") + credentials)
        XCTAssertEqual(current.status, 200, current.text)
        XCTAssertEqual(current.headers[header], token, "users/current echoes the web auth token")

        let saved = try daemon.request("POST", path("records/modify") + credentials,
                                       body: Array(modifyBody([("create", record("r1", "Thing"))], zone: nil).serializedString().utf8))
        XCTAssertEqual(saved.status, 200, saved.text)
        XCTAssertEqual(saved.headers[header], token, "records/modify echoes it")

        let rejected = try daemon.request("POST", path("records/lookup") + credentials, body: Array(#"{"records": 5}"#.utf8))
        XCTAssertEqual(rejected.status, 400, rejected.text)
        XCTAssertEqual(rejected.headers[header], token, "an authenticated request that fails later still echoes it")

        let device = try daemon.request("POST", devicePath("create") + credentials, body: Array("{}".utf8))
        XCTAssertEqual(device.status, 200, device.text)
        XCTAssertEqual(device.headers[header], token, "the /device/1/ token operations echo it")

        let bearer = try daemon.request("GET", path("users/current"), token: token)
        XCTAssertEqual(bearer.status, 200, bearer.text)
        XCTAssertNil(bearer.headers[header], "a bearer-token request carries no web auth token")

        let unknown = try daemon.request("GET", path("users/current") + "?ckAPIToken=\(apiToken)&ckWebAuthToken=nope")
        XCTAssertEqual(unknown.status, 401, unknown.text)
        XCTAssertNil(unknown.headers[header], "unauthenticated: nothing to echo")
    }

    // MARK: deviceID in created and modified

    /// POSTs an operation of the private database with `X-Device-ID` when `device` is given.
    func callAsDevice(_ operation: String, _ token: String, _ body: JSONValue, device: String?) throws -> JSONValue {
        let headers = device.map { [("X-Device-ID", $0)] } ?? []
        let answer = try daemon.request("POST", path(operation), token: token, headers: headers, body: Array(body.serializedString().utf8)).parsed()
        XCTAssertEqual(answer.status, 200, "\(operation): \(answer.body.serializedString().prefix(300))")
        return answer.body
    }

    func testCreatedAndModifiedAlwaysCarryDeviceID() throws {
        let (_, token) = try makeUser("stamps")
        try createZone("ScorebookData", token)
        let placeholder = ChangeStamp.placeholderDeviceID

        func assertDevices(_ record: JSONValue?, created: String, modified: String, _ context: String,
                           file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertEqual(record?["created"]?["deviceID"]?.stringValue, created, "created.deviceID in \(context): \(record?.serializedString() ?? "nil")",
                           file: file, line: line)
            XCTAssertEqual(record?["modified"]?["deviceID"]?.stringValue, modified, "modified.deviceID in \(context)", file: file, line: line)
            XCTAssertNotNil(record?["created"]?["userRecordName"]?.stringValue, "created keeps its userRecordName in \(context)", file: file, line: line)
            XCTAssertNotNil(record?["modified"]?["timestamp"]?.int64Value, "modified keeps its timestamp in \(context)", file: file, line: line)
        }

        // Saved without X-Device-ID: the placeholder, everywhere a record is answered.
        let anonymous = try callAsDevice("records/modify", token, modifyBody([("create", record("Game|~|anon", "Game", ["name": ["value": "Go"]]))]),
                                         device: nil)["records"]?.arrayValue?.first
        assertDevices(anonymous, created: placeholder, modified: placeholder, "records/modify")
        let emptyHeader = try callAsDevice("records/modify", token, modifyBody([("create", record("Game|~|empty", "Game"))]),
                                           device: "")["records"]?.arrayValue?.first
        assertDevices(emptyHeader, created: placeholder, modified: placeholder, "an empty X-Device-ID")

        // Saved by one device, updated by another.
        let phone = try callAsDevice("records/modify", token, modifyBody([("create", record("Game|~|dev", "Game", ["name": ["value": "Catan"]]))]),
                                     device: "phone-1")["records"]?.arrayValue?.first
        assertDevices(phone, created: "phone-1", modified: "phone-1", "a create with X-Device-ID")
        let tag = try XCTUnwrap(phone?["recordChangeTag"]?.stringValue)
        let laptop = try callAsDevice("records/modify", token, modifyBody([("update", record("Game|~|dev", "Game", ["name": ["value": "Carcassonne"]], tag: tag))]),
                                      device: "laptop-2")["records"]?.arrayValue?.first
        assertDevices(laptop, created: "phone-1", modified: "laptop-2", "an update from another device")

        assertDevices(try lookup(token, "Game|~|anon"), created: placeholder, modified: placeholder, "records/lookup")
        assertDevices(try lookup(token, "Game|~|dev"), created: "phone-1", modified: "laptop-2", "records/lookup")

        let queried = try ok("records/query", token, ["zoneID": ["zoneName": "ScorebookData"], "query": ["recordType": "Game"]])["records"]?.arrayValue ?? []
        XCTAssertEqual(queried.count, 3)
        assertDevices(queried.first { $0["recordName"] == "Game|~|anon" }, created: placeholder, modified: placeholder, "records/query")
        assertDevices(queried.first { $0["recordName"] == "Game|~|dev" }, created: "phone-1", modified: "laptop-2", "records/query")

        let feed = try fetchChanges(token).state
        assertDevices(feed["Game|~|anon"] ?? nil, created: placeholder, modified: placeholder, "records/changes")
        assertDevices(feed["Game|~|dev"] ?? nil, created: "phone-1", modified: "laptop-2", "records/changes")
        let zoneFeed = try ok("changes/zone", token, ["zones": [["zoneID": ["zoneName": "ScorebookData"]]]])
        let zoneRecords = zoneFeed["zones"]?.arrayValue?.first?["records"]?.arrayValue ?? []
        assertDevices(zoneRecords.first { $0["recordName"] == "Game|~|anon" }, created: placeholder, modified: placeholder, "changes/zone")

        let conflict = try modify(token, [("update", record("Game|~|dev", "Game", ["name": ["value": "Stale"]], tag: tag))]).first
        XCTAssertEqual(conflict?["serverErrorCode"], "CONFLICT")
        assertDevices(conflict?["serverRecord"], created: "phone-1", modified: "laptop-2", "a CONFLICT's serverRecord")

        let desired = try ok("records/lookup", token, ["zoneID": ["zoneName": "ScorebookData"], "desiredKeys": [],
                                                       "records": [["recordName": "Game|~|anon"]]])["records"]?.arrayValue?.first
        assertDevices(desired, created: placeholder, modified: placeholder, "records/lookup with empty desiredKeys")
    }
    // MARK: request keys of the CloudKit reference

    /// `desiredKeys` of one lookup entry or one modify operation wins over the request's; the
    /// request's `desiredKeys` and `desiredRecordTypes` of `changes/zone` apply to every zone that
    /// gives none.
    func testPerItemDesiredKeysAndChangesZoneDefaults() throws {
        let (_, token) = try makeUser("keys")
        try createZone("ScorebookData", token)
        let fields: [String: JSONValue] = ["name": ["value": "Catan"], "rating": ["value": 4.5], "plays": ["value": 3]]
        let saved = try ok("records/modify", token, [
            "zoneID": ["zoneName": "ScorebookData"], "desiredKeys": ["name"],
            "operations": [
                ["operationType": "create", "record": record("Game|~|a", "Game", fields)],
                ["operationType": "create", "desiredKeys": ["rating"], "record": record("Game|~|b", "Game", fields)],
                ["operationType": "create", "record": record("Player|~|p", "Player", ["name": ["value": "Ann"]])],
            ],
        ])["records"]?.arrayValue ?? []
        XCTAssertEqual(saved.map { $0["fields"]?.objectValue?.keys.sorted() ?? [] }, [["name"], ["rating"], ["name"]],
                       "an operation's desiredKeys wins over the request's: \(saved)")

        let looked = try ok("records/lookup", token, [
            "zoneID": ["zoneName": "ScorebookData"], "desiredKeys": ["plays"],
            "records": [["recordName": "Game|~|a"], ["recordName": "Game|~|b", "desiredKeys": ["name", "rating"]]],
        ])["records"]?.arrayValue ?? []
        XCTAssertEqual(looked.map { $0["fields"]?.objectValue?.keys.sorted() ?? [] }, [["plays"], ["name", "rating"]],
                       "a lookup entry's desiredKeys wins over the request's")

        let feed = try ok("changes/zone", token, [
            "desiredKeys": ["name"], "desiredRecordTypes": ["Game"],
            "zones": [["zoneID": ["zoneName": "ScorebookData"]],
                      ["zoneID": ["zoneName": "ScorebookData"], "desiredKeys": ["plays"], "desiredRecordTypes": ["Game", "Player"]]],
        ])["zones"]?.arrayValue ?? []
        XCTAssertEqual(feed.count, 2)
        let defaults = feed.first?["records"]?.arrayValue ?? []
        XCTAssertEqual(Set(defaults.compactMap { $0["recordName"]?.stringValue }), ["Game|~|a", "Game|~|b"], "the request's desiredRecordTypes")
        XCTAssertTrue(defaults.allSatisfy { $0["fields"]?.objectValue?.keys.sorted() == ["name"] }, "the request's desiredKeys: \(defaults)")
        let own = feed.last?["records"]?.arrayValue ?? []
        XCTAssertEqual(Set(own.compactMap { $0["recordName"]?.stringValue }), ["Game|~|a", "Game|~|b", "Player|~|p"], "the zone's own types")
        XCTAssertEqual(own.first { $0["recordName"] == "Game|~|a" }?["fields"]?.objectValue?.keys.sorted(), ["plays"], "the zone's own keys")
    }
}
