import Foundation
import RecordModel
import SQLiteDB
import TestSupport
import XCTest

/// The parts of the HTTP API that need more than one request to show, over HTTP against the real
/// daemon: a change feed paged while another client writes, a store locked by another process,
/// references and parents at their edges, every query comparator.
final class APIEdgeCaseTests: DaemonTestCase {
    var token: String!

    override func setUpWithError() throws {
        token = try makeUser().token
        try createZone("ScorebookData", token)
    }

    func int(_ value: Int) -> JSONValue { ["value": .int(Int64(value)), "type": "INT64"] }

    func withParent(_ record: JSONValue, _ parent: JSONValue?) -> JSONValue {
        guard case .object(var members) = record else { return record }
        members["parent"] = parent
        return .object(members)
    }

    /// Change feeds: a client following `moreComing` with a small `resultsLimit` while another client
    /// creates, updates and deletes ends with exactly the zone's final state: no change skipped.
    func testPagingTheChangeFeedWhileAnotherClientWritesSkipsNothing() throws {
        let writerToken = try XCTUnwrap(token)
        let writes = DispatchGroup()
        let failure = LockedBox<String?>(nil)
        var expected: [String: Int?] = [:]  // the writer's own model: name → value, nil = deleted
        // The writer's script is fixed up front (seeded), so the expected state is known.
        var generator = SplitMix64(seed: 7)
        var script: [[(String, JSONValue)]] = []
        var live: [String] = []
        for batch in 0..<60 {
            var operations: [(String, JSONValue)] = []
            var touched: Set<String> = []
            for index in 0..<5 {
                let roll = generator.below(10)
                if roll < 5 || live.isEmpty {
                    let name = "w\(batch)-\(index)"
                    operations.append(("create", record(name, "Thing", ["n": int(batch)])))
                    live.append(name)
                    expected[name] = batch
                    touched.insert(name)
                } else if roll < 8 {
                    let name = generator.pick(live)
                    guard touched.insert(name).inserted else { continue }
                    operations.append(("forceUpdate", record(name, "Thing", ["n": int(1000 + batch)])))
                    expected[name] = 1000 + batch
                } else {
                    let position = generator.below(live.count)
                    let name = live[position]
                    guard touched.insert(name).inserted else { continue }
                    live.remove(at: position)
                    operations.append(("forceDelete", record(name)))
                    expected[name] = .some(nil)
                }
            }
            script.append(operations)
        }
        let daemon = try self.daemon
        let modifyPath = path("records/modify")
        let bodies = script.map { modifyBody($0).serializedString() }
        DispatchQueue.global().async(group: writes) {
            for body in bodies {
                guard let answer = try? daemon.post(modifyPath, token: writerToken, json: body), answer.status == 200,
                    answer.body["records"]?.arrayValue?.allSatisfy({ $0["serverErrorCode"] == nil }) == true
                else {
                    failure.set("a write batch failed")
                    return
                }
            }
        }

        var state: [String: JSONValue?] = [:]
        var syncToken: String?
        var pages = 0
        var writerDone = false
        while !writerDone {
            // Decide before reading whether this is the last pass: one full pass after the writer
            // has finished sees everything it wrote.
            writerDone = writes.wait(timeout: .now()) == .success
            let fetched = try fetchChanges(token, from: syncToken, resultsLimit: 3)
            for (name, entry) in fetched.state { state[name] = entry }
            syncToken = fetched.syncToken
            pages += 1
            XCTAssertLessThan(pages, 10_000, "the reader keeps up")
        }
        XCTAssertNil(failure.value)
        XCTAssertGreaterThan(pages, 1, "the reader paged while the writer wrote")
        for (name, value) in expected {
            let seen: JSONValue? = state[name] ?? nil
            if let number = value {
                XCTAssertEqual(seen?["fields"]?["n"]?["value"], .int(Int64(number)), "\(name): the latest value, never skipped")
            } else {
                XCTAssertNil(seen, "\(name) was deleted; the feed must not show it live")
            }
        }
        XCTAssertEqual(Set(state.compactMap { $0.value == nil ? nil : $0.key }),
                       Set(expected.compactMap { $0.value == nil ? nil : $0.key }), "live records: pages ∪ = final state")
    }

    /// `TRY_AGAIN_LATER`: another process holding the store's write lock past the busy
    /// timeout makes a write answer 503 with `retryAfter`; reads still answer, and the write
    /// succeeds once the lock is gone.
    func testAWriteWhileAnotherProcessHoldsTheLockIsTryAgainLater() throws {
        let locked = try DaemonProcess.start(extraArguments: ["--busy-timeout", "200"])
        defer { try? locked.stop() }
        let user = try locked.createUserInfo("locked")
        let zone = try locked.post(path("zones/modify"), token: user.token, json: """
            {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "ScorebookData"}}}]}
            """)
        XCTAssertEqual(zone.status, 200)
        let body = modifyBody([("create", record("Game|~|L", "Game", ["name": ["value": "Locked"]]))]).serializedString()

        let holder = try SQLiteConnection(path: locked.dataDirectory.appendingPathComponent("scorebook.sqlite").path)
        try holder.execute("BEGIN IMMEDIATE")
        let refused = try locked.post(path("records/modify"), token: user.token, json: body)
        XCTAssertEqual(refused.status, 503, "\(refused.body)")
        XCTAssertEqual(refused.body["serverErrorCode"], "TRY_AGAIN_LATER")
        XCTAssertNotNil(refused.body["retryAfter"]?.int64Value, "retryAfter tells the client how long to wait")
        XCTAssertNotNil(refused.body["uuid"]?.stringValue)
        XCTAssertFalse(refused.body["reason"]?.stringValue?.contains("INSERT") ?? true, "no SQL in the reason")
        let read = try locked.post(path("records/lookup"), token: user.token, json: #"{"zoneID": {"zoneName": "ScorebookData"}, "records": [{"recordName": "Game|~|L"}]}"#)
        XCTAssertEqual(read.status, 200, "reads do not wait for the writer (WAL)")
        XCTAssertEqual(read.body["records"]?.arrayValue?.first?["serverErrorCode"], "NOT_FOUND")
        try holder.execute("ROLLBACK")

        let accepted = try locked.post(path("records/modify"), token: user.token, json: body)
        XCTAssertEqual(accepted.status, 200)
        XCTAssertNotNil(accepted.body["records"]?.arrayValue?.first?["recordChangeTag"], "the same write succeeds after the lock is gone")
    }

    /// Parents do not cascade, so a child can outlive its parent: it stays editable. A
    /// reference naming another zone is refused; one naming the record's own zone is kept.
    func testOrphanedChildrenStayEditableAndReferencesStayInTheirZone() throws {
        let child = withParent(record("Player|~|kid", "Player", ["seat": int(1)]), ["recordName": "Match|~|mom"])
        try modify(token, [("create", record("Match|~|mom", "Match")), ("create", child)])
        try modify(token, [("forceDelete", record("Match|~|mom"))])
        let orphan = try XCTUnwrap(try lookup(token, "Player|~|kid"))
        XCTAssertEqual(orphan["parent"]?["recordName"], "Match|~|mom")
        let tag = try XCTUnwrap(orphan["recordChangeTag"]?.stringValue)
        let edited = try modify(token, [("update", withParent(record("Player|~|kid", "Player", ["seat": int(2)], tag: tag), orphan["parent"]))])
        XCTAssertNil(edited.first?["serverErrorCode"], "an unchanged, deleted parent does not block an edit: \(edited)")
        XCTAssertEqual(edited.first?["fields"]?["seat"]?["value"], 2)

        func referencing(_ zone: String) -> JSONValue {
            record("Score|~|\(zone)", "Score", ["player": ["value": ["recordName": "Player|~|kid", "action": "DELETE_SELF",
                                                                     "zoneID": ["zoneName": .string(zone)]], "type": "REFERENCE"]])
        }
        XCTAssertEqual(try modify(token, [("create", referencing("Elsewhere"))]).first?["serverErrorCode"], "BAD_REQUEST",
                       "a reference points to a record in the same zone")
        let same = try modify(token, [("create", referencing("ScorebookData"))]).first
        XCTAssertNil(same?["serverErrorCode"])
        XCTAssertEqual(same?["fields"]?["player"]?["value"]?["zoneID"]?["zoneName"], "ScorebookData", "the zoneID is echoed")
    }

    /// VALIDATE blocks deleting its target; a cascade inside a failed atomic batch is rolled back
    /// with the rest; replace needs the current tag; a token of another container is refused.
    func testReferenceRulesTagsAndTokensAtTheirEdges() throws {
        let validate: JSONValue = ["value": ["recordName": "Game|~|V", "action": "VALIDATE"], "type": "REFERENCE"]
        try modify(token, [("create", record("Game|~|V", "Game")), ("create", record("Match|~|V", "Match", ["notes": validate]))])
        XCTAssertEqual(try modify(token, [("forceDelete", record("Game|~|V"))]).first?["serverErrorCode"], "VALIDATING_REFERENCE_ERROR")
        XCTAssertNotNil(try lookup(token, "Game|~|V"), "the referenced record survives")

        let deleteSelf: JSONValue = ["value": ["recordName": "Game|~|C", "action": "DELETE_SELF"], "type": "REFERENCE"]
        try modify(token, [("create", record("Game|~|C", "Game")), ("create", record("Match|~|C", "Match", ["game": deleteSelf]))])
        let failed = try modify(token, [("forceDelete", record("Game|~|C")), ("update", record("Game|~|missing", "Game", [:], tag: "x"))])
        XCTAssertEqual(failed.map { $0["serverErrorCode"]?.stringValue }, ["ATOMIC_ERROR", "NOT_FOUND"])
        XCTAssertNotNil(try lookup(token, "Game|~|C"), "the failed batch deleted nothing")
        XCTAssertNotNil(try lookup(token, "Match|~|C"), "…and cascaded nothing")

        let current = try XCTUnwrap(try lookup(token, "Game|~|C")?["recordChangeTag"]?.stringValue)
        XCTAssertEqual(try modify(token, [("replace", record("Game|~|C", "Game", [:], tag: "stale"))]).first?["serverErrorCode"], "CONFLICT")
        XCTAssertEqual(try modify(token, [("replace", record("Game|~|C", "Game", [:]))]).first?["serverErrorCode"], "CONFLICT",
                       "replace without a tag")
        XCTAssertNotNil(try modify(token, [("replace", record("Game|~|C", "Game", [:], tag: current))]).first?["recordChangeTag"])

        let syncToken = try fetchChanges(token).syncToken
        let otherContainer = try daemon.post(path("records/changes", container: "iCloud.other"), token: token,
                                             json: #"{"zoneID": {"zoneName": "_defaultZone"}, "syncToken": "\#(syncToken)"}"#)
        assertError((otherContainer.status, otherContainer.body), 400, "BAD_REQUEST", "a token of another container")
    }

    /// `resultsLimit: 0` means as many as allowed (CloudKit's reading), not one record a page;
    /// `zones/modify` takes at most 400 operations, like `records/modify`.
    func testAZeroResultsLimitMeansTheMaximumAndZoneBatchesAreCapped() throws {
        try modify(token, (0..<12).map { ("create", record("z\($0)", "Thing")) })
        let page = try ok("records/changes", token, ["zoneID": ["zoneName": "ScorebookData"], "resultsLimit": 0])
        XCTAssertEqual(page["records"]?.arrayValue?.count, 12)
        XCTAssertEqual(page["moreComing"], false)
        let query = try ok("records/query", token, ["zoneID": ["zoneName": "ScorebookData"], "resultsLimit": 0,
                                                    "query": ["recordType": "Thing"]])
        XCTAssertEqual(query["records"]?.arrayValue?.count, 12)

        let tooMany: JSONValue = ["operations": .array((0...400).map { index in
            ["operationType": "create", "zone": ["zoneID": ["zoneName": .string("Zone\(index)")]]]
        })]
        assertError(try call("zones/modify", token, tooMany), 413, "LIMIT_EXCEEDED", "401 zone operations")
        let zones = try ok("zones/list", token)["zones"]?.arrayValue?.count
        XCTAssertEqual(zones, 2, "nothing of the refused request was applied")
    }

    /// Queries: every comparator, over HTTP, on values of several types and on `recordName`.
    func testEveryQueryComparator() throws {
        let items: [(String, Int, String, [String])] = [
            ("Thing|~|a", 1, "apple", ["red"]), ("Thing|~|b", 2, "apricot", ["green", "red"]),
            ("Thing|~|c", 3, "banana", ["yellow"]), ("Thing|~|d", 4, "cherry", []),
        ]
        try modify(token, items.map { name, n, word, tags in
            ("create", record(name, "Thing", ["n": int(n), "word": ["value": .string(word), "type": "STRING"],
                                              "tags": ["value": .array(tags.map { .string($0) }), "type": "STRING_LIST"]]))
        })
        func query(_ comparator: String, _ field: String, _ value: JSONValue, system: Bool = false) throws -> [String] {
            var filter: [String: JSONValue] = ["comparator": .string(comparator), "fieldValue": ["value": value]]
            filter[system ? "systemFieldName" : "fieldName"] = .string(field)
            let body: JSONValue = ["zoneID": ["zoneName": "ScorebookData"],
                                   "query": ["recordType": "Thing", "filterBy": [.object(filter)], "sortBy": [["fieldName": "n"]]]]
            return try ok("records/query", token, body)["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } ?? []
        }
        let all = items.map(\.0)
        XCTAssertEqual(try query("EQUALS", "n", 2), ["Thing|~|b"])
        XCTAssertEqual(try query("NOT_EQUALS", "n", 2), ["Thing|~|a", "Thing|~|c", "Thing|~|d"])
        XCTAssertEqual(try query("LESS_THAN", "n", 3), ["Thing|~|a", "Thing|~|b"])
        XCTAssertEqual(try query("LESS_THAN_OR_EQUALS", "n", 3), ["Thing|~|a", "Thing|~|b", "Thing|~|c"])
        XCTAssertEqual(try query("GREATER_THAN", "n", 3), ["Thing|~|d"])
        XCTAssertEqual(try query("GREATER_THAN_OR_EQUALS", "n", 3), ["Thing|~|c", "Thing|~|d"])
        XCTAssertEqual(try query("IN", "word", ["banana", "cherry", "kiwi"]), ["Thing|~|c", "Thing|~|d"])
        XCTAssertEqual(try query("NOT_IN", "word", ["banana", "cherry"]), ["Thing|~|a", "Thing|~|b"])
        XCTAssertEqual(try query("BEGINS_WITH", "word", "ap"), ["Thing|~|a", "Thing|~|b"])
        XCTAssertEqual(try query("LIST_CONTAINS", "tags", "red"), ["Thing|~|a", "Thing|~|b"])
        XCTAssertEqual(try query("EQUALS", "recordName", "Thing|~|c", system: true), ["Thing|~|c"])
        XCTAssertEqual(try query("GREATER_THAN", "n", 0), all)
        assertError(try call("records/query", token, ["zoneID": ["zoneName": "ScorebookData"],
                                                       "query": ["recordType": "Thing", "filterBy": [["comparator": "NEAR", "fieldName": "n",
                                                                                                       "fieldValue": ["value": 1]]]]]),
                    400, "BAD_REQUEST", "an unknown comparator")
    }
}
