import RecordModel
import RecordStore
import SQLiteDB
import SQLiteRecordStore
import XCTest

/// Issue 16: `records/query` reads index ranges, so a page costs about its size (`rowsVisited`
/// counts the rows the store's scans read), and the answers stay those of the query's rules
/// (checked against an order computed here, independently of the store).
final class QueryIndexTests: StoreTestCase {
    /// 240 scores: `value` = i % 24 (DOUBLE, negative for odd i), `round` on two of three, a
    /// label; and 600 notes of another type that no score query may read.
    override func setUpWithError() throws {
        try super.setUpWithError()
        var operations: [(RecordOperationType, JSONValue)] = []
        for index in 0..<240 {
            var fields: [String: JSONValue] = [
                "value": field(.double(Double(index % 24) * (index % 2 == 0 ? 1 : -1)), "DOUBLE"),
                "label": field(.string("label-\(index % 10)"), "STRING"),
            ]
            if index % 3 != 0 { fields["round"] = field(.int(Int64(index % 5)), "INT64") }
            operations.append((.create, record(String(format: "score-%03d", index), "Score", fields)))
        }
        for chunk in stride(from: 0, to: operations.count, by: 200) {
            try modify(dev, Array(operations[chunk..<min(chunk + 200, operations.count)]))
        }
        let notes: [(RecordOperationType, JSONValue)] = (0..<600).map {
            (.create, record(String(format: "note-%03d", $0), "Note", ["value": field(.double(7), "DOUBLE")]))
        }
        for chunk in stride(from: 0, to: notes.count, by: 300) { try modify(dev, Array(notes[chunk..<chunk + 300])) }
    }

    func query(_ json: JSONValue, limit: Int, marker: String? = nil) throws -> QueryPage {
        try store.queryRecords(dev, zone: .default, query: try RecordQuery(json: json), resultsLimit: limit, continuationMarker: marker)
    }

    /// Every page of the query, by `limit`; the largest `rowsVisited` of one page.
    func pages(_ json: JSONValue, limit: Int) throws -> (names: [String], mostRowsRead: Int, pages: Int) {
        var names: [String] = []
        var marker: String?
        var mostRowsRead = 0
        var count = 0
        repeat {
            let page = try query(json, limit: limit, marker: marker)
            XCTAssertLessThanOrEqual(page.records.count, limit)
            XCTAssertGreaterThanOrEqual(page.rowsVisited, page.records.count, "the store counts the rows it reads")
            names += page.records.map(\.recordName)
            mostRowsRead = max(mostRowsRead, page.rowsVisited)
            marker = page.continuationMarker
            count += 1
        } while marker != nil && count < 500
        XCTAssertNil(marker, "paging ends")
        return (names, mostRowsRead, count)
    }

    /// The scores as (name, value, round?), straight from the records.
    func allScores() throws -> [(name: String, value: Double, round: Int64?)] {
        (0..<240).map { index in
            let name = String(format: "score-%03d", index)
            return (name, Double(index % 24) * (index % 2 == 0 ? 1 : -1), index % 3 != 0 ? Int64(index % 5) : nil)
        }
    }

    func testAnEqualsFilterReadsOnlyMatchingRowsWhateverTheZoneHolds() throws {
        let json: JSONValue = ["recordType": "Score", "filterBy": [["comparator": "EQUALS", "fieldName": "value", "fieldValue": ["value": 4]]]]
        let result = try pages(json, limit: 4)
        let expected = try allScores().filter { $0.value == 4 }.map(\.name)
        XCTAssertEqual(expected.count, 10)
        XCTAssertEqual(result.names, expected, "by record name, each once")
        XCTAssertLessThanOrEqual(result.mostRowsRead, 5, "a page reads its rows and one more, not the 840 records of the zone")
        XCTAssertEqual(result.pages, 3)
    }

    func testAQueryOfOneTypeNeverReadsTheOtherTypesRecords() throws {
        let first = try query(["recordType": "Score"], limit: 10)
        XCTAssertEqual(first.records.map(\.recordName), (0..<10).map { String(format: "score-%03d", $0) })
        XCTAssertLessThanOrEqual(first.rowsVisited, 11)
        let notes = try pages(["recordType": "Note"], limit: 200)
        XCTAssertEqual(notes.names.count, 600)
        XCTAssertLessThanOrEqual(notes.mostRowsRead, 201)
    }

    func testSortingByAFieldEveryRecordHasPagesThroughTheIndexInBothDirections() throws {
        let scores = try allScores()
        for ascending in [true, false] {
            let json: JSONValue = ["recordType": "Score", "sortBy": [["fieldName": "value", "ascending": .bool(ascending)]]]
            let expected = scores.sorted {
                $0.value != $1.value ? (ascending ? $0.value < $1.value : $0.value > $1.value) : $0.name < $1.name
            }.map(\.name)
            let result = try pages(json, limit: 25)
            XCTAssertEqual(result.names, expected, "ascending: \(ascending); ties by record name")
            XCTAssertLessThanOrEqual(result.mostRowsRead, 26, "one index range per page (ascending: \(ascending))")
        }
    }

    /// `round` is missing from a third of the scores: those come last ascending, first descending,
    /// by name; a range filter on the field excludes them without reading them.
    func testSortingByAFieldSomeRecordsLackPutsThemLastAscendingAndFirstDescending() throws {
        let scores = try allScores()
        for ascending in [true, false] {
            let json: JSONValue = ["recordType": "Score", "sortBy": [["fieldName": "round", "ascending": .bool(ascending)]]]
            let present = scores.filter { $0.round != nil }.sorted {
                $0.round! != $1.round! ? (ascending ? $0.round! < $1.round! : $0.round! > $1.round!) : $0.name < $1.name
            }.map(\.name)
            let missing = scores.filter { $0.round == nil }.map(\.name)
            XCTAssertEqual(try pages(json, limit: 30).names, ascending ? present + missing : missing + present)
        }
        let ranged: JSONValue = [
            "recordType": "Score", "sortBy": [["fieldName": "round", "ascending": false]],
            "filterBy": [["comparator": "GREATER_THAN_OR_EQUALS", "fieldName": "round", "fieldValue": ["value": 3]]],
        ]
        let result = try pages(ranged, limit: 10)
        let expected = scores.filter { ($0.round ?? -1) >= 3 }.sorted { $0.round! != $1.round! ? $0.round! > $1.round! : $0.name < $1.name }
        XCTAssertEqual(result.names, expected.map(\.name))
        XCTAssertLessThanOrEqual(result.mostRowsRead, 11, "the range is the index's, the missing values are not read")
    }

    /// Two sorts have no index: the store visits candidates in chunks and keeps the best, with
    /// the same answers and markers.
    func testSeveralSortsStillPageCorrectly() throws {
        let json: JSONValue = [
            "recordType": "Score",
            "sortBy": [["fieldName": "label", "ascending": false], ["fieldName": "value", "ascending": true]],
            "filterBy": [["comparator": "NOT_EQUALS", "fieldName": "value", "fieldValue": ["value": 0]]],
        ]
        typealias Row = (name: String, value: Double, label: String)
        var rows: [Row] = []
        for score in try allScores() where score.value != 0 {
            let index = Int(score.name.dropFirst(6))!
            rows.append((score.name, score.value, "label-\(index % 10)"))
        }
        rows.sort { (a: Row, b: Row) -> Bool in
            if a.label != b.label { return a.label > b.label }
            if a.value != b.value { return a.value < b.value }
            return a.name < b.name
        }
        let expected = rows.map(\.name)
        XCTAssertEqual(try pages(json, limit: 17).names, expected)
    }

    /// The index follows every write in its transaction: updates move a record, deletions (and
    /// cascades) remove it, a deleted zone takes its entries along.
    func testTheIndexFollowsUpdatesDeletionsAndZoneDeletion() throws {
        func equals(_ value: Double) throws -> [String] {
            try pages(["recordType": "Score", "filterBy": [["comparator": "EQUALS", "fieldName": "value", "fieldValue": ["value": .double(value)]]]],
                      limit: 50).names
        }
        XCTAssertEqual(try equals(100), [])
        try save(dev, .forceUpdate, record("score-004", "Score", ["value": field(100.0, "DOUBLE")]))
        XCTAssertEqual(try equals(100), ["score-004"])
        XCTAssertFalse(try equals(4).contains("score-004"), "the old entry went with the update")
        try modify(dev, [(.forceDelete, record("score-004"))])
        XCTAssertEqual(try equals(100), [])
        let sorted = try pages(["recordType": "Score", "sortBy": [["fieldName": "value", "ascending": false]]], limit: 100)
        XCTAssertEqual(sorted.names.count, 239)
        XCTAssertFalse(sorted.names.contains("score-004"))

        let other = ZoneID(zoneName: "Other")
        _ = try store.createZone(dev, zoneName: "Other")
        try save(dev, zone: other, record("x", "Score", ["value": field(5.0, "DOUBLE")]))
        try store.deleteZone(dev, zoneName: "Other")
        _ = try store.createZone(dev, zoneName: "Other")
        let page = try store.queryRecords(dev, zone: other, query: try RecordQuery(json: ["recordType": "Score", "sortBy": [["fieldName": "value"]]]),
                                          resultsLimit: 10, continuationMarker: nil)
        XCTAssertEqual(page.records.count, 0)
    }

    /// A batch that updates a record, deletes one whose deletion cascades, and (not atomic) has an
    /// operation that fails: the index holds each record's final state only.
    func testABatchLeavesTheIndexAtEachRecordsFinalState() throws {
        func values(_ value: Double) throws -> [String] {
            try pages(["recordType": "Memo", "filterBy": [["comparator": "EQUALS", "fieldName": "n", "fieldValue": ["value": .double(value)]]]],
                      limit: 50).names
        }
        try modify(dev, [
            (.create, record("parent", "Memo", ["n": field(.double(3), "DOUBLE")])),
            (.create, record("child", "Memo", ["n": field(.double(2), "DOUBLE"), "up": ref("parent", .deleteSelf)])),
            (.create, record("changed", "Memo", ["n": field(.double(1), "DOUBLE")])),
        ])
        XCTAssertEqual(try values(2), ["child"])
        let results = try modify(dev, atomic: false, [
            (.forceUpdate, record("changed", "Memo", ["n": field(.double(2), "DOUBLE")])),
            (.forceDelete, record("parent")),
            (.create, record("score-001", "Memo", ["n": field(.double(2), "DOUBLE")])),  // exists: fails
            (.create, record("kept", "Memo", ["n": field(.double(2), "DOUBLE")])),
        ])
        guard case .failed = results[2] else { return XCTFail("the create of an existing record fails: \(results[2])") }
        XCTAssertEqual(try values(1), [])
        XCTAssertEqual(try values(2), ["changed", "kept"], "the cascade removed child's entry, the failed create added none")
        XCTAssertEqual(try values(3), [])
        let all = try pages(["recordType": "Memo", "sortBy": [["fieldName": "n", "ascending": false]]], limit: 10)
        XCTAssertEqual(all.names, ["changed", "kept"])
    }

    /// Issue 13: a field is indexed from the first query that scans it. Records written before
    /// are found through the index that query builds, records written after keep it current, and
    /// fields no query used cost a write nothing (no entries on SQLite's disk).
    func testAFieldIsIndexedFromItsFirstQueryAndKeptFromThenOn() throws {
        func entries() throws -> Int64? {
            guard let sqlite = (store.base as? SQLiteStorage)?.store else { return nil }
            return try SQLiteConnection(path: sqlite.path).scalarInt("SELECT COUNT(*) FROM query_index WHERE record_type = 'Tally'")
        }
        try modify(dev, (0..<30).map { (.create, record(String(format: "tally-%02d", $0), "Tally", [
            "points": field(.int(Int64($0 % 10)), "INT64"), "label": field(.string("t\($0)"), "STRING"),
        ])) })
        if let count = try entries() { XCTAssertEqual(count, 0, "no query has used a Tally field yet") }

        let threes: JSONValue = ["recordType": "Tally", "filterBy": [["comparator": "EQUALS", "fieldName": "points", "fieldValue": ["value": 3]]]]
        let first = try pages(threes, limit: 2)
        XCTAssertEqual(first.names, ["tally-03", "tally-13", "tally-23"])
        XCTAssertLessThanOrEqual(first.mostRowsRead, 3, "the first query already reads an index range")
        if let count = try entries() { XCTAssertEqual(count, 30, "one entry per record for `points`, none for `label`") }

        try modify(dev, [(.create, record("tally-30", "Tally", ["points": field(.int(3), "INT64")])),
                         (.forceUpdate, record("tally-13", "Tally", ["points": field(.int(4), "INT64")])),
                         (.forceDelete, record("tally-23"))])
        XCTAssertEqual(try pages(threes, limit: 2).names, ["tally-03", "tally-30"], "later writes keep the index")
        let descending = try pages(["recordType": "Tally", "sortBy": [["fieldName": "points", "ascending": false]]], limit: 7)
        XCTAssertEqual(descending.names.prefix(4), ["tally-09", "tally-19", "tally-29", "tally-08"])
        XCTAssertEqual(descending.names.count, 30)
        let labelled = try pages(["recordType": "Tally", "filterBy": [["comparator": "EQUALS", "fieldName": "label", "fieldValue": ["value": "t7"]]]],
                                 limit: 5)
        XCTAssertEqual(labelled.names, ["tally-07"], "a second field is indexed by its own first query")
        if let count = try entries() { XCTAssertEqual(count, 59, "29 live records with both fields, tally-30 with points only") }
        if store.base is SQLiteStorage { XCTAssertEqual(try store.checkIntegrity(), []) }
    }

    /// Text keys keep a bounded prefix: strings longer than it still filter exactly.
    func testLongStringsSharingAPrefixFilterExactly() throws {
        let prefix = String(repeating: "p", count: 400)
        try modify(dev, [(.create, record("long-a", "Memo", ["text": field(.string(prefix + "a"), "STRING")])),
                         (.create, record("long-b", "Memo", ["text": field(.string(prefix + "b"), "STRING")]))])
        let json: JSONValue = ["recordType": "Memo", "filterBy": [["comparator": "EQUALS", "fieldName": "text", "fieldValue": ["value": .string(prefix + "b")]]]]
        XCTAssertEqual(try query(json, limit: 10).records.map(\.recordName), ["long-b"])
        let less: JSONValue = ["recordType": "Memo", "filterBy": [["comparator": "LESS_THAN", "fieldName": "text", "fieldValue": ["value": .string(prefix + "b")]]]]
        XCTAssertEqual(try query(less, limit: 10).records.map(\.recordName), ["long-a"])
    }

    /// On SQLite, the plan of each shape names an index and never a scan of `records` itself.
    func testSQLitePlansUseTheIndexes() async throws {
        guard let sqlite = (store.base as? SQLiteStorage)?.engine else { throw XCTSkip("SQLite's query plan") }
        let shapes: [JSONValue] = [
            ["recordType": "Score"],
            ["recordType": "Score", "filterBy": [["comparator": "EQUALS", "fieldName": "value", "fieldValue": ["value": 4]]]],
            ["recordType": "Score", "sortBy": [["fieldName": "value", "ascending": false]]],
            ["recordType": "Score", "sortBy": [["fieldName": "round"]],
             "filterBy": [["comparator": "LESS_THAN", "fieldName": "round", "fieldValue": ["value": 2]]]],
        ]
        for shape in shapes {
            let plan = try await sqlite.queryPlan(dev, zone: .default, query: try RecordQuery(json: shape), resultsLimit: 10)
            XCTAssertFalse(plan.isEmpty)
            XCTAssertTrue(plan.contains { $0.contains("USING INDEX") || $0.contains("USING PRIMARY KEY") || $0.contains("USING COVERING INDEX") },
                          "\(shape.serializedString()): \(plan)")
            XCTAssertFalse(plan.contains { $0.hasPrefix("SCAN r") || $0.hasPrefix("SCAN q") || $0 == "SCAN records" },
                           "no full scan: \(plan)")
        }
    }

    /// `scorebookd check` verifies the index against the records (SQLite; the index is written
    /// in every write's transaction, so a store that passed the suite has none of these problems).
    func testCheckFindsAnIndexThatDisagreesWithTheRecords() throws {
        guard let sqlite = (store.base as? SQLiteStorage)?.store else { throw XCTSkip("scorebookd check runs on SQLite") }
        _ = try query(["recordType": "Score", "sortBy": [["fieldName": "value"]]], limit: 1)  // indexes `value`
        try modify(dev, [(.forceDelete, record("score-010"))])
        try save(dev, .forceUpdate, record("score-011", "Score", ["value": field(.double(3), "DOUBLE")]))
        XCTAssertEqual(try store.checkIntegrity(), [])
        let connection = try SQLiteConnection(path: sqlite.path)
        // An entry left behind by the deleted record: it is not live, and the counts no longer match.
        try connection.execute("INSERT INTO query_index SELECT zone_id, 'Score', 'value', 'n0', 'score-010' FROM query_index LIMIT 1")
        let problems = try store.checkIntegrity()
        XCTAssertTrue(problems.contains { $0.contains("query index holds 'score-010'") }, "\(problems)")
        XCTAssertTrue(problems.contains { $0.contains("240 query index entries for 'Score.value', counts say 239") }, "\(problems)")
    }
}
