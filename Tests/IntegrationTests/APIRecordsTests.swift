import Foundation
import RecordModel
import Synchronization
import XCTest

/// Every operation of the API over HTTP against the real daemon, including a client
/// that talks like CloudKit Web Services clients do.
final class APIRecordsTests: DaemonTestCase {
    var token: String!

    override func setUpWithError() throws {
        token = try makeUser().token
        try createZone("ScorebookData", token)
    }

    func testEveryRecordOperationOverHTTP() throws {
        let created = try modify(token, [("create", record("Game|~|1", "Game", ["name": ["value": "Catan", "type": "STRING"]]))])
        let tag1 = try XCTUnwrap(created.first?["recordChangeTag"]?.stringValue)
        XCTAssertEqual(created.first?["zoneID"]?["zoneName"], "ScorebookData")
        XCTAssertNotNil(created.first?["zoneID"]?["ownerRecordName"]?.stringValue)
        XCTAssertNotNil(created.first?["created"]?["timestamp"]?.int64Value)

        XCTAssertEqual(try modify(token, [("create", record("Game|~|1", "Game"))]).first?["serverErrorCode"], "EXISTS")

        let updated = try modify(token, [("update", record("Game|~|1", "Game", ["lowScoreWins": ["value": 1, "type": "INT64"]], tag: tag1))])
        let tag2 = try XCTUnwrap(updated.first?["recordChangeTag"]?.stringValue)
        XCTAssertNotEqual(tag2, tag1)
        XCTAssertEqual(updated.first?["fields"]?["name"]?["value"], "Catan", "update keeps other fields")

        let conflict = try modify(token, [("update", record("Game|~|1", "Game", ["name": ["value": "Lost"]], tag: tag1))]).first
        XCTAssertEqual(conflict?["serverErrorCode"], "CONFLICT")
        XCTAssertEqual(conflict?["recordName"], "Game|~|1")
        XCTAssertEqual(conflict?["serverRecord"]?["recordChangeTag"]?.stringValue, tag2, "CONFLICT carries the server copy")
        XCTAssertEqual(conflict?["serverRecord"]?["fields"]?["lowScoreWins"]?["value"], 1)
        XCTAssertNotNil(conflict?["reason"]?.stringValue)

        let replaced = try modify(token, [("replace", record("Game|~|1", "Game", ["lowScoreWins": ["value": 0, "type": "INT64"]], tag: tag2))])
        XCTAssertNil(replaced.first?["fields"]?["name"], "replace drops omitted fields")
        let tag3 = try XCTUnwrap(replaced.first?["recordChangeTag"]?.stringValue)

        XCTAssertNotNil(try modify(token, [("forceUpdate", record("Game|~|2", "Game", ["name": ["value": "Go"]]))]).first?["recordChangeTag"])
        XCTAssertNotNil(try modify(token, [("forceReplace", record("Game|~|2", "Game", [:], tag: "stale"))]).first?["recordChangeTag"])
        XCTAssertEqual(try modify(token, [("update", record("Game|~|404", "Game", [:], tag: "x"))]).first?["serverErrorCode"], "NOT_FOUND")
        XCTAssertEqual(try modify(token, [("update", record("Game|~|1", "Match", [:], tag: tag3))]).first?["serverErrorCode"], "BAD_REQUEST",
                       "a record's type never changes")

        XCTAssertEqual(try modify(token, [("delete", record("Game|~|1", nil, tag: tag1))]).first?["serverErrorCode"], "CONFLICT")
        XCTAssertEqual(try modify(token, [("delete", record("Game|~|1", nil, tag: tag3))]).first, ["recordName": "Game|~|1", "deleted": true])
        XCTAssertEqual(try modify(token, [("forceDelete", record("Game|~|1"))]).first?["deleted"], true, "forceDelete of a missing record")
        XCTAssertEqual(try modify(token, [("delete", record("Game|~|1", nil, tag: tag3))]).first?["serverErrorCode"], "NOT_FOUND")
        XCTAssertNil(try lookup(token, "Game|~|1"))
        XCTAssertNotNil(try lookup(token, "Game|~|2"))
    }

    func testAtomicAndNonAtomicBatchesOverHTTP() throws {
        let atomic = try modify(token, [("create", record("a1", "Thing")), ("update", record("missing", "Thing", [:], tag: "x"))])
        XCTAssertEqual(atomic.map { $0["serverErrorCode"]?.stringValue }, ["ATOMIC_ERROR", "NOT_FOUND"])
        XCTAssertEqual(atomic.map { $0["recordName"]?.stringValue }, ["a1", "missing"])
        XCTAssertNil(try lookup(token, "a1"))

        let partial = try modify(token, [("create", record("a1", "Thing")), ("update", record("missing", "Thing", [:], tag: "x"))], atomic: false)
        XCTAssertNotNil(partial.first?["recordChangeTag"])
        XCTAssertEqual(partial.last?["serverErrorCode"], "NOT_FOUND")
        XCTAssertNotNil(try lookup(token, "a1"))
    }

    func testCascadesAndReferenceErrorsOverHTTP() throws {
        func reference(_ name: String, _ action: String = "DELETE_SELF") -> JSONValue {
            ["value": ["recordName": .string(name), "action": .string(action)], "type": "REFERENCE"]
        }
        let saved = try modify(token, [
            ("create", record("Game|~|G", "Game")), ("create", record("Match|~|M", "Match", ["game": reference("Game|~|G")])),
            ("create", record("Player|~|P", "Player", ["match": reference("Match|~|M")])),
            ("create", record("Score|~|S", "Score", ["player": reference("Player|~|P")])),
        ])
        XCTAssertTrue(saved.allSatisfy { $0["serverErrorCode"] == nil }, "\(saved)")
        let token0 = try fetchChanges(token).syncToken
        XCTAssertEqual(try modify(token, [("create", record("Score|~|X", "Score", ["player": reference("Player|~|gone")]))]).first?["serverErrorCode"],
                       "VALIDATING_REFERENCE_ERROR")
        try modify(token, [("forceDelete", record("Game|~|G"))])
        let changes = try fetchChanges(token, from: token0).state
        XCTAssertEqual(Set(changes.keys), ["Game|~|G", "Match|~|M", "Player|~|P", "Score|~|S"], "the cascade shows in the feed")
        XCTAssertTrue(changes.values.allSatisfy { $0 == nil })
    }

    func testLookupQueryAndDesiredKeys() throws {
        try modify(token, (1...5).map { index in
            ("create", record("Score|~|\(index)", "Score", ["value": ["value": .double(Double(index) * 1.5), "type": "DOUBLE"],
                                                             "round": ["value": .int(Int64(index % 2)), "type": "INT64"]]))
        })
        let lookup = try ok("records/lookup", token, ["zoneID": ["zoneName": "ScorebookData"], "desiredKeys": ["round"],
                                                      "records": [["recordName": "Score|~|2"], ["recordName": "nope"]]])
        let entries = lookup["records"]?.arrayValue ?? []
        XCTAssertEqual(entries.first?["fields"]?.objectValue?.keys.sorted(), ["round"], "desiredKeys limits the fields")
        XCTAssertEqual(entries.last?["serverErrorCode"], "NOT_FOUND")
        XCTAssertEqual(entries.last?["recordName"], "nope")

        var names: [String] = []
        var marker: JSONValue = nil
        for _ in 0..<10 {
            var body: [String: JSONValue] = [
                "zoneID": ["zoneName": "ScorebookData"], "resultsLimit": 2,
                "query": ["recordType": "Score", "filterBy": [["comparator": "GREATER_THAN", "fieldName": "value", "fieldValue": ["value": 2]]],
                          "sortBy": [["fieldName": "value", "ascending": false]]],
            ]
            if !marker.isNull { body["continuationMarker"] = marker }
            let page = try ok("records/query", token, .object(body))
            names += page["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } ?? []
            marker = page["continuationMarker"] ?? nil
            if marker.isNull { break }
        }
        XCTAssertEqual(names, ["Score|~|5", "Score|~|4", "Score|~|3", "Score|~|2"])
    }

    func testChangeFeedsAndZonesOverHTTP() throws {
        let empty = try ok("records/changes", token, ["zoneID": ["zoneName": "ScorebookData"]])
        XCTAssertEqual(empty["records"]?.arrayValue?.count, 0)
        XCTAssertEqual(empty["moreComing"], false)
        XCTAssertEqual(empty["zoneID"]?["zoneName"], "ScorebookData")
        let start = try XCTUnwrap(empty["syncToken"]?.stringValue)
        let databaseStart = try XCTUnwrap(try ok("changes/database", token)["syncToken"]?.stringValue)

        try modify(token, (0..<7).map { ("create", record("r\($0)", "Thing")) })
        try modify(token, [("forceDelete", record("r3"))])
        let paged = try fetchChanges(token, from: start, resultsLimit: 2)
        XCTAssertEqual(paged.state.count, 7)
        XCTAssertEqual(paged.state["r3"].map { $0 == nil }, true, "r3 as a tombstone")

        try createZone("Second", token)
        try modify(token, [("create", record("s", "Thing"))], zone: "Second")
        let multi = try ok("changes/zone", token, ["zones": [
            ["zoneID": ["zoneName": "ScorebookData"], "syncToken": .string(paged.syncToken)],
            ["zoneID": ["zoneName": "Second"], "desiredRecordTypes": ["Thing"]],
            ["zoneID": ["zoneName": "Missing"]],
        ]])
        let zones = multi["zones"]?.arrayValue ?? []
        XCTAssertEqual(zones.count, 3)
        XCTAssertEqual(zones[0]["records"]?.arrayValue?.count, 0)
        XCTAssertEqual(zones[1]["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue }, ["s"])
        XCTAssertEqual(zones[2]["serverErrorCode"], "ZONE_NOT_FOUND", "one missing zone is an error entry, not a failed request")

        assertError(try call("records/changes", token, ["zoneID": ["zoneName": "Second"], "syncToken": .string(paged.syncToken)]), 400,
                    "BAD_REQUEST", "a token of another zone")

        for operation in ["changes/database", "zones/changes"] {
            let changed = try ok(operation, token, ["syncToken": .string(databaseStart)])
            let names = Set(changed["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue } ?? [])
            XCTAssertEqual(names, ["ScorebookData", "Second"], operation)
            XCTAssertEqual(changed["moreComing"], false)
        }

        let deleted = try ok("zones/modify", token, ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "Second"]]]]])
        XCTAssertEqual(deleted["zones"]?.arrayValue?.first?["deleted"], true)
        let afterDelete = try ok("zones/changes", token, ["syncToken": .string(databaseStart)])
        let second = afterDelete["zones"]?.arrayValue?.first { $0["zoneID"]?["zoneName"] == "Second" }
        XCTAssertEqual(second?["deleted"], true, "the deleted zone shows in the database feed")
        let listed = try daemon.get(path("zones/list"), token: token)
        XCTAssertEqual(listed.status, 200, "zones/list also answers GET")
        XCTAssertEqual(Set(listed.body["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue } ?? []),
                       [ZoneID.defaultZoneName, "ScorebookData"])
        XCTAssertEqual(listed.body["zones"]?.arrayValue?.first?["atomic"], true)
        assertError(try call("records/modify", token, modifyBody([("create", record("x", "Thing"))], zone: "Second")), 404, "ZONE_NOT_FOUND")
    }

    func testLimitsOnOperationsAndRecordSize() throws {
        assertError(try call("records/modify", token, modifyBody((0..<401).map { ("create", record("r\($0)", "Thing")) })), 413,
                    "LIMIT_EXCEEDED", "401 operations")
        XCTAssertNil(try lookup(token, "r0"))
        let big = String(repeating: "x", count: 1_100_000)
        let answer = try modify(token, [("create", record("big", "Thing", ["text": ["value": .string(big), "type": "STRING"]]))])
        XCTAssertEqual(answer.first?["serverErrorCode"], "LIMIT_EXCEEDED", "a record over 1 MB")
    }

    func testResultsLimitsAreCappedAndOversizedListsRefused() throws {
        for batch in 0..<2 {
            try modify(token, (0..<225).map { ("create", record("r\(batch)-\($0)", "Thing", ["i": ["value": .int(Int64($0))], "j": ["value": 1]])) })
        }
        let feed = try ok("records/changes", token, ["zoneID": ["zoneName": "ScorebookData"], "resultsLimit": 1000, "desiredKeys": ["i"]])
        XCTAssertEqual(feed["records"]?.arrayValue?.count, 400, "resultsLimit is capped at 400")
        XCTAssertEqual(feed["moreComing"], true)
        XCTAssertEqual(feed["records"]?.arrayValue?.first?["fields"]?.objectValue?.keys.sorted(), ["i"], "desiredKeys applies to feeds")
        let defaultFeed = try ok("records/changes", token, ["zoneID": ["zoneName": "ScorebookData"]])
        XCTAssertEqual(defaultFeed["records"]?.arrayValue?.count, 400, "and defaults to 400")

        let query = try ok("records/query", token, ["zoneID": ["zoneName": "ScorebookData"], "resultsLimit": 500, "query": ["recordType": "Thing"]])
        XCTAssertEqual(query["records"]?.arrayValue?.count, 200, "query results are capped at 200")
        XCTAssertNotNil(query["continuationMarker"]?.stringValue)

        let names: [JSONValue] = (0..<401).map { ["recordName": .string("r0-\($0)")] }
        assertError(try call("records/lookup", token, ["zoneID": ["zoneName": "ScorebookData"], "records": .array(names)]), 413,
                    "LIMIT_EXCEEDED", "401 lookups")
        let zones: [JSONValue] = (0..<101).map { _ in ["zoneID": ["zoneName": "ScorebookData"]] }
        assertError(try call("changes/zone", token, ["zones": .array(zones)]), 413, "LIMIT_EXCEEDED", "101 zones in changes/zone")
    }

    /// What an existing CloudKit Web Services client sends: pretty-printed JSON, field values
    /// without `type`, no `zoneID` (the default zone), `zones/changes`, unknown keys.
    func testACloudKitWebServicesStyleClient() throws {
        let apiToken = try daemon.createAPIToken()
        let credentials = "?ckAPIToken=\(apiToken)&ckWebAuthToken=\(token!)"
        let modifyText = """
            {
                "operations" : [
                    {
                        "operationType" : "create",
                        "record" : {
                            "recordType" : "Game",
                            "recordName" : "Game|~|9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D",
                            "fields" : {
                                "name" : { "value" : "Catan" },
                                "lowScoreWins" : { "value" : 0 },
                                "rating" : { "value" : 4.5 },
                                "tags" : { "value" : [ "strategy", "trading" ] }
                            }
                        }
                    }
                ],
                "atomic" : true,
                "numbersAsStrings" : false,
                "desiredKeys" : null
            }
            """
        let saved = try daemon.request("POST", path("records/modify") + credentials, headers: [("Content-Type", "text/plain")],
                                       body: Array(modifyText.utf8)).parsed()
        XCTAssertEqual(saved.status, 200, saved.body.serializedString())
        let record = try XCTUnwrap(saved.body["records"]?.arrayValue?.first)
        XCTAssertEqual(record["zoneID"]?["zoneName"], "_defaultZone", "no zoneID means the default zone")
        XCTAssertEqual(record["fields"]?["name"], ["value": "Catan", "type": "STRING"], "responses always carry type")
        XCTAssertEqual(record["fields"]?["lowScoreWins"], ["value": 0, "type": "INT64"])
        XCTAssertEqual(record["fields"]?["rating"], ["value": 4.5, "type": "DOUBLE"])
        XCTAssertEqual(record["fields"]?["tags"]?["type"], "STRING_LIST")

        let changes = try daemon.request("POST", path("records/changes") + credentials, body: Array("{\n}\n".utf8)).parsed()
        XCTAssertEqual(changes.status, 200, changes.body.serializedString())
        XCTAssertEqual(changes.body["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue },
                       ["Game|~|9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D"])
        let oldStyle = try daemon.request("POST", path("zones/changes") + credentials, body: []).parsed()
        XCTAssertEqual(oldStyle.status, 200, "an empty body is an empty request: \(oldStyle.body.serializedString())")
        XCTAssertNotNil(oldStyle.body["syncToken"]?.stringValue)
        XCTAssertEqual(oldStyle.body["moreComing"], false)
        let syncToken = try XCTUnwrap(oldStyle.body["syncToken"]?.stringValue)
        XCTAssertNotNil(Data(base64Encoded: syncToken), "sync tokens are standard base64")
    }

    /// What a CloudKit client does first — fetch changes without a token and without `zoneID` —
    /// works for a brand-new user: the default zone always exists (regression: the first read of a
    /// new database once answered 404 ZONE_NOT_FOUND).
    func testTheFirstReadOfTheDefaultZoneByANewUserSucceeds() throws {
        let (_, token) = try makeUser("fresh")
        let first = try call("records/changes", token, [:])
        XCTAssertEqual(first.status, 200, "records/changes as the first request: \(first.body.serializedString())")
        XCTAssertEqual(first.body["records"]?.arrayValue?.count, 0)

        let lookup = try call("records/lookup", token, ["records": [["recordName": "x"]]], environment: "production")
        XCTAssertEqual(lookup.status, 200, "records/lookup as the first request in production: \(lookup.body.serializedString())")

        let (_, other) = try makeUser("fresh")
        let zones = try call("changes/zone", other, ["zones": [["zoneID": ["zoneName": "_defaultZone"]]]])
        XCTAssertNil(zones.body["zones"]?.arrayValue?.first?["serverErrorCode"],
                     "changes/zone as the first request: \(zones.body.serializedString())")
    }

    /// Concurrent first saves of a new development field with different types: exactly one type
    /// is learned, the other creates are refused (regression: all three once succeeded).
    func testConcurrentFirstSavesOfANewFieldLearnOneType() throws {
        let (_, token) = try makeUser("race")
        let daemon = try self.daemon
        var roundsWithSeveralWinners: [Int] = []
        for round in 0..<8 {
            let statuses = SaveCounter()
            let start = DispatchSemaphore(value: 0)
            let group = DispatchGroup()
            for (index, wire) in ["STRING", "INT64", "DOUBLE"].enumerated() {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    start.wait()
                    let value: JSONValue = wire == "STRING" ? "text" : wire == "INT64" ? 1 : 1.5
                    let body: JSONValue = ["operations": [["operationType": "create", "record": [
                        "recordName": .string("race-\(round)-\(index)"), "recordType": .string("Race\(round)"),
                        "fields": ["f": ["value": value, "type": .string(wire)]],
                    ]]]]
                    let answer = try? daemon.post("/database/1/\(DaemonTestCase.container)/development/private/records/modify",
                                                  token: token, json: body.serializedString())
                    statuses.add(answer?.body["records"]?.arrayValue?.first?["recordChangeTag"] != nil)
                }
            }
            for _ in 0..<3 { start.signal() }
            XCTAssertEqual(group.wait(timeout: .now() + 30), .success)
            if statuses.saved != 1 { roundsWithSeveralWinners.append(round) }
        }
        XCTAssertEqual(roundsWithSeveralWinners, [], "rounds in which a new field was not learned with exactly one type")
    }
}

/// Counts saves reported by several threads.
final class SaveCounter: Sendable {
    private let count = Mutex(0)

    func add(_ saved: Bool) {
        if saved { count.withLock { $0 += 1 } }
    }

    var saved: Int { count.withLock { $0 } }
}
