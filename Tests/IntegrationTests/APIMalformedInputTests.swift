import Foundation
import RecordModel
import XCTest

/// Malformed input of every kind ("No input, however malformed, makes the daemon
/// crash, hang or answer with anything but JSON"). Each case must get a JSON error dictionary with
/// the right status and code; afterwards the daemon still answers /health and the stored data is
/// exactly as before.
final class APIMalformedInputTests: DaemonTestCase {
    var token: String!
    var baselineTag: String!
    var baselineSyncToken: String!
    var baselineDatabaseToken: String!

    override func setUpWithError() throws {
        token = try makeUser().token
        try createZone("ScorebookData", token)
        let saved = try modify(token, [("create", record("Game|~|keep", "Game", ["name": ["value": "Keep me", "type": "STRING"]]))])
        baselineTag = try XCTUnwrap(saved.first?["recordChangeTag"]?.stringValue)
        baselineSyncToken = try fetchChanges(token).syncToken
        baselineDatabaseToken = try XCTUnwrap(try ok("changes/database", token)["syncToken"]?.stringValue)
    }

    override func tearDownWithError() throws {
        // Whatever the test sent, the daemon is alive and nothing stored has changed.
        try assertHealthy()
        let kept = try XCTUnwrap(try lookup(token, "Game|~|keep"), "the baseline record is still there")
        XCTAssertEqual(kept["recordChangeTag"]?.stringValue, baselineTag)
        XCTAssertEqual(kept["fields"]?["name"]?["value"], "Keep me")
        XCTAssertEqual(try fetchChanges(token, from: baselineSyncToken).state.count, 0, "no change reached the zone's log")
        let zones = try ok("changes/database", token, ["syncToken": .string(baselineDatabaseToken)])["zones"]?.arrayValue
        XCTAssertEqual(zones?.count, 0, "no zone was created, changed or deleted")
    }

    /// Sends raw bytes to an operation of the private database.
    func send(_ operation: String, _ bytes: [UInt8], method: String = "POST", environment: String = "development") throws
        -> (status: Int, body: JSONValue)
    {
        try daemon.request(method, path(operation, environment: environment), token: token, body: bytes).parsed()
    }

    func send(_ operation: String, _ text: String) throws -> (status: Int, body: JSONValue) {
        try send(operation, Array(text.utf8))
    }

    /// A refusal either of the whole request, or (for per-record problems) of every item inside a 200.
    func assertRefused(_ answer: (status: Int, body: JSONValue), _ code: String, _ what: String,
                       file: StaticString = #filePath, line: UInt = #line)
    {
        if answer.status == 200, let items = answer.body["records"]?.arrayValue ?? answer.body["zones"]?.arrayValue {
            XCTAssertFalse(items.isEmpty, what, file: file, line: line)
            for item in items {
                XCTAssertEqual(item["serverErrorCode"]?.stringValue, code, "\(what): \(item.serializedString().prefix(300))", file: file, line: line)
                XCTAssertNotNil(item["reason"]?.stringValue, what, file: file, line: line)
            }
        } else {
            assertError(answer, ServerErrorCode(rawValue: code)?.httpStatus ?? 0, code, what, file: file, line: line)
        }
    }

    func testTruncatedAndNonObjectBodies() throws {
        let full = modifyBody([("create", record("Game|~|new", "Game", ["name": ["value": "x"]]))]).serializedString()
        for length in [1, 2, 10, full.count / 2, full.count - 1] {
            assertError(try send("records/modify", String(full.prefix(length))), 400, "BAD_REQUEST", "truncated at \(length)")
        }
        for body in ["[]", "\"operations\"", "5", "null", "true", "{} {}", "{\"operations\": [],}", "\u{FEFF}{}"] {
            assertError(try send("records/modify", body), 400, "BAD_REQUEST", body.debugDescription)
        }
    }

    func testWrongTypesForEveryMemberOfRecordsModify() throws {
        let valid: JSONValue = ["recordName": "Game|~|new", "recordType": "Game", "fields": ["name": ["value": "x"]]]
        let wholeRequest: [(String, JSONValue)] = [
            ("operations missing", [:]),
            ("operations not an array", ["operations": ["operationType": "create"]]),
            ("operation not an object", ["operations": [5]]),
            ("operationType not a string", ["operations": [["operationType": 1, "record": valid]]]),
            ("operationType unknown", ["operations": [["operationType": "upsert", "record": valid]]]),
            ("operationType wrong case", ["operations": [["operationType": "CREATE", "record": valid]]]),
            ("record missing", ["operations": [["operationType": "create"]]]),
            ("record not an object", ["operations": [["operationType": "create", "record": "Game|~|new"]]]),
            ("recordName not a string", ["operations": [["operationType": "create", "record": ["recordName": 7, "recordType": "Game"]]]]),
            ("zoneID not an object", ["zoneID": "ScorebookData", "operations": [["operationType": "create", "record": valid]]]),
            ("zoneName not a string", ["zoneID": ["zoneName": 5], "operations": [["operationType": "create", "record": valid]]]),
            ("atomic not a boolean", ["atomic": "yes", "operations": [["operationType": "create", "record": valid]]]),
            ("desiredKeys not an array", ["desiredKeys": "name", "operations": [["operationType": "create", "record": valid]]]),
            ("desiredKeys of numbers", ["desiredKeys": [1], "operations": [["operationType": "create", "record": valid]]]),
        ]
        for (what, body) in wholeRequest {
            var json = body
            if case .object(var members) = json, members["zoneID"] == nil {
                members["zoneID"] = ["zoneName": "ScorebookData"]
                json = .object(members)
            }
            assertError(try call("records/modify", token, json), 400, "BAD_REQUEST", what)
        }

        let perRecord: [(String, JSONValue)] = [
            ("recordType not a string", ["recordName": "Game|~|new", "recordType": 5]),
            ("recordType not an identifier", ["recordName": "Game|~|new", "recordType": "Ga me"]),
            ("fields not an object", ["recordName": "Game|~|new", "recordType": "Game", "fields": [1, 2]]),
            ("field not an object", ["recordName": "Game|~|new", "recordType": "Game", "fields": ["name": "x"]]),
            ("field value of the wrong type", ["recordName": "Game|~|new", "recordType": "Game", "fields": ["n": ["value": "x", "type": "INT64"]]]),
            ("field type not a string", ["recordName": "Game|~|new", "recordType": "Game", "fields": ["n": ["value": 1, "type": 1]]]),
            ("field type unknown", ["recordName": "Game|~|new", "recordType": "Game", "fields": ["n": ["value": 1, "type": "INT"]]]),
            ("field name invalid", ["recordName": "Game|~|new", "recordType": "Game", "fields": ["bad name": ["value": 1]]]),
            ("reference without a name", ["recordName": "Game|~|new", "recordType": "Game", "fields": ["r": ["value": ["action": "NONE"], "type": "REFERENCE"]]]),
            ("parent not an object", ["recordName": "Game|~|new", "recordType": "Game", "parent": "Game|~|keep"]),
            ("huge integer for INT64", ["recordName": "Game|~|new", "recordType": "Game",
                                        "fields": ["n": ["value": .double(1e30), "type": "INT64"]]]),
        ]
        for (what, record) in perRecord {
            assertRefused(try call("records/modify", token, modifyBody([("create", record)])), "BAD_REQUEST", what)
        }
        XCTAssertNil(try lookup(token, "Game|~|new"))
    }

    func testWrongTypesForTheOtherOperations() throws {
        let cases: [(String, JSONValue)] = [
            ("records/lookup", ["zoneID": ["zoneName": "ScorebookData"], "records": "Game|~|keep"]),
            ("records/lookup", ["zoneID": ["zoneName": "ScorebookData"], "records": [["recordName": 1]]]),
            ("records/query", ["zoneID": ["zoneName": "ScorebookData"], "query": 5]),
            ("records/query", ["zoneID": ["zoneName": "ScorebookData"], "query": ["recordType": "Game"], "resultsLimit": "ten"]),
            ("records/query", ["zoneID": ["zoneName": "ScorebookData"], "query": ["recordType": "Game"], "resultsLimit": -1]),
            ("records/query", ["zoneID": ["zoneName": "ScorebookData"], "query": ["recordType": "Game"], "continuationMarker": 5]),
            ("records/query", ["zoneID": ["zoneName": "ScorebookData"], "query": ["recordType": "Game", "filterBy": [["comparator": "LIKE"]]]]),
            ("records/changes", ["zoneID": ["zoneName": "ScorebookData"], "syncToken": 5]),
            ("records/changes", ["zoneID": ["zoneName": "ScorebookData"], "syncToken": "bm90IGEgdG9rZW4="]),
            ("records/changes", ["zoneID": ["zoneName": "ScorebookData"], "resultsLimit": 1.5]),
            ("changes/zone", ["zones": ["zoneName": "ScorebookData"]]),
            ("changes/zone", ["zones": [["zoneID": ["zoneName": "ScorebookData"], "desiredRecordTypes": "Game"]]]),
            ("changes/database", ["syncToken": ["token"]]),
            ("zones/changes", ["syncToken": "!!!"]),
            ("zones/lookup", ["zones": 5]),
            ("zones/modify", ["operations": [["operationType": "explode", "zone": ["zoneID": ["zoneName": "X"]]]]]),
            ("zones/modify", ["operations": [["operationType": "create"]]]),
            ("zones/modify", ["operations": "create"]),
        ]
        for (operation, body) in cases {
            assertError(try call(operation, token, body), 400, "BAD_REQUEST", "\(operation) \(body.serializedString())")
        }
    }

    func testDeepNestingHugeNumbersAndInvalidUTF8() throws {
        assertError(try send("records/modify", String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)), 400,
                    "BAD_REQUEST", "10,000 levels of arrays")
        assertError(try send("records/modify", "{\"operations\":" + String(repeating: "{\"a\":", count: 10_000) + "1"
                                + String(repeating: "}", count: 10_001)), 400, "BAD_REQUEST", "10,000 levels of objects")
        assertError(try send("records/changes", #"{"resultsLimit": 1e400}"#), 400, "BAD_REQUEST", "a number out of range")
        assertError(try send("records/changes", #"{"resultsLimit": 99999999999999999999999}"#), 400, "BAD_REQUEST", "a huge limit")
        assertError(try send("records/changes", #"{"resultsLimit": -5}"#), 400, "BAD_REQUEST", "a negative limit")
        assertError(try send("records/changes", "{\"resultsLimit\": " + String(repeating: "9", count: 5000) + "}"), 400, "BAD_REQUEST",
                    "a 5000-digit number")

        var invalid = Array(#"{"operations":[{"operationType":"create","record":{"recordName":"Game|~|"#.utf8)
        invalid += [0xFF, 0xFE, 0xC3]
        invalid += Array(#"","recordType":"Game"}}]}"#.utf8)
        assertError(try send("records/modify", invalid), 400, "BAD_REQUEST", "invalid UTF-8 in a string")
        assertError(try send("records/modify", [0x7B, 0x80, 0x7D]), 400, "BAD_REQUEST", "invalid UTF-8 outside strings")
        assertError(try send("records/modify", [0x00, 0x00, 0x00, 0x00]), 400, "BAD_REQUEST", "NUL bytes")
        assertError(try send("records/modify", Array(#"{"operations":[],"zoneID":{"zoneName":"\ud800"}}"#.utf8)), 400, "BAD_REQUEST",
                    "an unpaired surrogate escape")
    }

    func testABodyOverTheLimitIs413() throws {
        let size = 40 * 1024 * 1024
        var body = Array(#"{"operations":[{"operationType":"create","record":{"recordName":"Game|~|big","recordType":"Game","fields":{"name":{"value":""#.utf8)
        body += [UInt8](repeating: UInt8(ascii: "x"), count: size - body.count - 12)
        body += Array(#""}}}}]}"#.utf8)
        let started = Date()
        let answer = try send("records/modify", body)
        assertError(answer, 413, "LIMIT_EXCEEDED", "a 40 MB body")
        XCTAssertLessThan(Date().timeIntervalSince(started), 20, "answered without waiting for a timeout")
        XCTAssertNil(try lookup(token, "Game|~|big"))
    }

    func testInvalidNamesAreBadRequest() throws {
        let names = ["Game|~|\u{1}", "Game\n1", "tab\tname", String(repeating: "n", count: 256), "_leading", "", "caf\u{E9}", "\u{7F}"]
        for name in names {
            assertRefused(try call("records/modify", token, modifyBody([("create", record(name, "Game"))])), "BAD_REQUEST",
                          "recordName \(name.debugDescription.prefix(40))")
            assertRefused(try call("records/modify", token, modifyBody([("create", record(name, "Game"))], zone: name)), "BAD_REQUEST",
                          "zoneName \(name.debugDescription.prefix(40)) in a modify")
            assertRefused(try call("zones/modify", token, ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(name)]]]]]),
                          "BAD_REQUEST", "zones/modify create \(name.debugDescription.prefix(40))")
        }
        assertRefused(try call("zones/modify", token, ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "_defaultZone"]]]]]),
                      "BAD_REQUEST", "deleting the default zone")
        for container in [String(repeating: "c", count: 256), "bad%20container", "a%01b", "c:d"] {
            let answer = try daemon.request("POST", "/database/1/\(container)/development/private/zones/list", token: token,
                                            body: Array("{}".utf8)).parsed()
            assertError(answer, 400, "BAD_REQUEST", "container \(container.prefix(40))")
        }
    }

    func testPathTraversalUnknownEndpointsAndWrongMethods() throws {
        let notFound = [
            "/", "/database", "/database/1", "/database/2/\(DaemonTestCase.container)/development/private/zones/list",
            "/etc/passwd", "/database/1/../../etc/passwd", "/../../../../etc/passwd", "/health/../etc/passwd",
            path("records/explode"), path("records"), path("records/modify/extra"), path("zones/list/../../../../etc/passwd"),
            "/database/1/\(DaemonTestCase.container)/development/nonsense/zones/list",
        ]
        for target in notFound {
            let answer = try daemon.request("POST", target, token: token, body: Array("{}".utf8)).parsed()
            XCTAssertTrue([400, 404].contains(answer.status), "\(target): \(answer.status)")
            XCTAssertNotNil(answer.body["serverErrorCode"]?.stringValue, target)
            XCTAssertFalse(answer.body.serializedString().contains("root:"), "\(target) leaks no file")
        }
        assertError(try daemon.request("POST", path("records/explode"), token: token, body: Array("{}".utf8)).parsed(), 404, "NOT_FOUND",
                    "unknown operation")
        assertError(try daemon.request("GET", "/nothing/here").parsed(), 404, "NOT_FOUND", "unknown path without credentials")
        assertError(try daemon.request("POST", "/database/1/\(DaemonTestCase.container)/staging/private/zones/list", token: token,
                                       body: Array("{}".utf8)).parsed(), 400, "BAD_REQUEST", "unknown environment")

        for method in ["PUT", "DELETE", "PATCH", "OPTIONS"] {
            assertError(try daemon.request(method, path("records/modify"), token: token, body: Array("{}".utf8)).parsed(), 400, "BAD_REQUEST",
                        "\(method) records/modify")
        }
        for operation in ["records/modify", "records/lookup", "records/changes", "zones/modify"] {
            assertError(try daemon.get(path(operation), token: token), 400, "BAD_REQUEST", "GET \(operation)")
        }
        let head = try daemon.request("HEAD", "/health")
        XCTAssertTrue([200, 400, 405].contains(head.status), "HEAD /health: \(head.status)")
    }

    /// In the shared database a zone is named with its owner: a record request without one is a
    /// bad request, not a look into the caller's own zones (sharing).
    func testSharedDatabaseRequestsNeedTheZonesOwner() throws {
        for operation in ["records/modify", "records/changes", "records/lookup", "records/query"] {
            let body = #"{"zoneID": {"zoneName": "ScorebookData"}, "operations": [], "records": [], "query": {"recordType": "Game"}}"#
            assertError(try daemon.request("POST", path(operation, database: "shared"), token: token, body: Array(body.utf8)).parsed(),
                        400, "BAD_REQUEST", "shared \(operation)")
        }
        XCTAssertEqual(try daemon.request("POST", path("zones/list", database: "shared"), token: token, body: Array("{}".utf8)).parsed().body,
                       ["zones": []])
    }

    func testGarbageThatIsNotHTTPLeavesTheDaemonServing() throws {
        for raw in ["GARBAGE\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "\u{0}\u{1}\u{2}\r\n\r\n", "POST /health HTTP/1.1\r\nContent-Length: -1\r\n\r\n"] {
            _ = try? RawHTTP.sendBytes(port: try daemon.port, Array(raw.utf8), timeout: 5)
        }
        try assertHealthy()
    }

    /// A `recordChangeTag` of the wrong JSON type is BAD_REQUEST like every other wrong type, not
    /// CONFLICT, which would send a client into merge-and-retry (regression).
    func testAChangeTagOfTheWrongTypeIsBadRequestNotConflict() throws {
        let (_, token) = try makeUser("tag")
        try createZone("ScorebookData", token)
        let saved = try modify(token, [("create", record("Game|~|1", "Game", ["name": ["value": "Catan"]]))])
        XCTAssertNotNil(saved.first?["recordChangeTag"]?.stringValue)
        for type in ["update", "replace", "delete"] {
            var wrong = record("Game|~|1", "Game", ["name": ["value": "Changed"]])
            if case .object(var members) = wrong {
                members["recordChangeTag"] = 5
                wrong = .object(members)
            }
            let answer = try modify(token, [(type, wrong)])
            XCTAssertEqual(answer.first?["serverErrorCode"], "BAD_REQUEST", "\(type) with \"recordChangeTag\": 5")
        }
    }
}
