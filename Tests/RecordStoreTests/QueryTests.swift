import RecordModel
import RecordStore
import XCTest

/// `records/query`: comparators, AND-combined filters, sorting and paging.
final class QueryTests: StoreTestCase {
    /// Five scores: (name, value, round, player, tags).
    let scores: [(String, Double, Int64, String, [String])] = [
        ("s1", 10, 1, "pA", ["opening"]),
        ("s2", 25.5, 2, "pA", ["bonus", "late"]),
        ("s3", 7, 1, "pB", []),
        ("s4", 25.5, 3, "pB", ["late"]),
        ("s5", -3, 2, "pC", ["penalty"]),
    ]

    override func setUpWithError() throws {
        try super.setUpWithError()
        var operations: [(RecordOperationType, JSONValue)] = ["pA", "pB", "pC"].map { (.create, record($0, "Player")) }
        for (name, value, round, player, tags) in scores {
            var fields: [String: JSONValue] = [
                "value": field(.double(value), "DOUBLE"), "round": field(.int(round), "INT64"),
                "player": ref(player, .deleteSelf), "label": field(.string("score-\(name)"), "STRING"),
            ]
            if !tags.isEmpty { fields["tags"] = field(.array(tags.map { .string($0) }), "STRING_LIST") }
            operations.append((.create, record(name, "Score", fields)))
        }
        try modify(dev, operations)
        try save(dev, record("other", "Note", ["value": field(10.0, "DOUBLE")]))
    }

    func query(_ json: JSONValue, limit: Int = 200, marker: String? = nil) throws -> QueryPage {
        try store.queryRecords(dev, zone: .default, query: try RecordQuery(json: json), resultsLimit: limit, continuationMarker: marker)
    }

    func names(_ filters: [JSONValue], sortBy: [JSONValue] = [["systemFieldName": "recordName"]]) throws -> [String] {
        try query(["recordType": "Score", "filterBy": .array(filters), "sortBy": .array(sortBy)]).records.map(\.recordName)
    }

    func filter(_ comparator: String, _ fieldName: String, _ value: JSONValue) -> JSONValue {
        ["comparator": .string(comparator), "fieldName": .string(fieldName), "fieldValue": ["value": value]]
    }

    func testEveryComparator() throws {
        XCTAssertEqual(try names([filter("EQUALS", "value", 25.5)]), ["s2", "s4"])
        XCTAssertEqual(try names([filter("NOT_EQUALS", "value", 25.5)]), ["s1", "s3", "s5"])
        XCTAssertEqual(try names([filter("LESS_THAN", "value", 10)]), ["s3", "s5"])
        XCTAssertEqual(try names([filter("LESS_THAN_OR_EQUALS", "value", 10)]), ["s1", "s3", "s5"])
        XCTAssertEqual(try names([filter("GREATER_THAN", "value", 10)]), ["s2", "s4"])
        XCTAssertEqual(try names([filter("GREATER_THAN_OR_EQUALS", "value", 10)]), ["s1", "s2", "s4"])
        XCTAssertEqual(try names([filter("IN", "round", [1, 3])]), ["s1", "s3", "s4"])
        XCTAssertEqual(try names([filter("NOT_IN", "round", [1, 3])]), ["s2", "s5"])
        XCTAssertEqual(try names([filter("BEGINS_WITH", "label", "score-s")]).count, 5)
        XCTAssertEqual(try names([filter("BEGINS_WITH", "label", "score-s3")]), ["s3"])
        XCTAssertEqual(try names([filter("LIST_CONTAINS", "tags", "late")]), ["s2", "s4"])
        XCTAssertEqual(try names([filter("EQUALS", "player", ["recordName": "pB"])]), ["s3", "s4"], "a reference compares by record name")
    }

    func testFiltersCombineWithAndAndSystemFieldsCanBeFiltered() throws {
        XCTAssertEqual(try names([filter("EQUALS", "value", 25.5), filter("EQUALS", "player", ["recordName": "pB"])]), ["s4"])
        XCTAssertEqual(try names([["comparator": "EQUALS", "systemFieldName": "recordName", "fieldValue": ["value": "s5"]]]), ["s5"])
        XCTAssertEqual(try names([filter("GREATER_THAN", "value", 1000)]), [])
        XCTAssertEqual(try query(["recordType": "Note"]).records.map(\.recordName), ["other"], "only the queried type")
    }

    func testSortingByFieldsDescendingAndWithTies() throws {
        let byValueThenRound = try names([], sortBy: [["fieldName": "value", "ascending": false], ["fieldName": "round", "ascending": true]])
        XCTAssertEqual(byValueThenRound, ["s2", "s4", "s1", "s3", "s5"])
        XCTAssertEqual(try names([], sortBy: [["fieldName": "value"]]), ["s5", "s3", "s1", "s2", "s4"], "ascending by default")
        let byCreation = try names([], sortBy: [["systemFieldName": "createdTimestamp", "ascending": false]])
        XCTAssertEqual(Set(byCreation), ["s1", "s2", "s3", "s4", "s5"])
    }

    func testContinuationMarkersPageThroughEveryResultOnce() throws {
        let json: JSONValue = ["recordType": "Score", "sortBy": [["fieldName": "value", "ascending": true]]]
        var seen: [String] = []
        var marker: String?
        var pages = 0
        repeat {
            let page = try query(json, limit: 2, marker: marker)
            XCTAssertLessThanOrEqual(page.records.count, 2)
            seen += page.records.map(\.recordName)
            marker = page.continuationMarker
            pages += 1
        } while marker != nil && pages < 10
        XCTAssertEqual(seen, ["s5", "s3", "s1", "s2", "s4"])
        XCTAssertEqual(pages, 3)
        XCTAssertNil(try query(json, limit: 200).continuationMarker, "no marker when everything fits")
    }

    /// Issue 16: a marker is a position in the order, not an offset. While a client pages by 2,
    /// another writes: a record sorting before the pages already read appears, a record already
    /// read is deleted, and a record not yet read changes its value (staying after the marker).
    /// Every record present throughout is seen exactly once; offsets would repeat s3 and skip one.
    func testPagingAQueryWhileAnotherClientWritesSkipsAndRepeatsNothing() throws {
        let json: JSONValue = ["recordType": "Score", "sortBy": [["fieldName": "value", "ascending": true]]]
        var seen: [String] = []
        let first = try query(json, limit: 2)
        seen += first.records.map(\.recordName)
        XCTAssertEqual(seen, ["s5", "s3"])
        try save(dev, record("s0", "Score", ["value": field(-100.0, "DOUBLE")]))
        let second = try query(json, limit: 2, marker: first.continuationMarker)
        seen += second.records.map(\.recordName)
        try modify(dev, [(.forceDelete, record("s5"))])
        try save(dev, .forceUpdate, record("s4", nil, ["value": field(99.0, "DOUBLE")]))
        var marker = second.continuationMarker
        for _ in 0..<5 where marker != nil {
            let page = try query(json, limit: 2, marker: marker)
            seen += page.records.map(\.recordName)
            marker = page.continuationMarker
        }
        XCTAssertNil(marker)
        XCTAssertEqual(seen, ["s5", "s3", "s1", "s2", "s4"], "each record present throughout exactly once, in order")
    }

    func testAMarkerFromAnotherZoneOrGarbageIsBadRequest() throws {
        let marker = try XCTUnwrap(try query(["recordType": "Score"], limit: 1).continuationMarker)
        _ = try store.createZone(dev, zoneName: "Elsewhere")
        assertThrows(.badRequest) {
            try store.queryRecords(dev, zone: ZoneID(zoneName: "Elsewhere"), query: try RecordQuery(json: ["recordType": "Score"]),
                                   resultsLimit: 1, continuationMarker: marker)
        }
        assertThrows(.badRequest) { try query(["recordType": "Score"], marker: "not a marker") }
    }

    func testMalformedQueriesAreBadRequest() throws {
        assertThrows(.badRequest) { try RecordQuery(json: ["filterBy": []]) }
        assertThrows(.badRequest) { try RecordQuery(json: ["recordType": "Score", "filterBy": [filter("LIKE", "value", 1)]]) }
        assertThrows(.badRequest) {
            try RecordQuery(json: ["recordType": "Score", "filterBy": [["comparator": "EQUALS", "fieldName": "value"]]])
        }
        assertThrows(.badRequest) {
            try RecordQuery(json: ["recordType": "Score", "sortBy": [["systemFieldName": "etag"]]])
        }
        assertThrows(.badRequest) { try names([filter("IN", "round", 1)]) }
    }

    func testDeletedRecordsAreNotFound() throws {
        try modify(dev, [(.forceDelete, record("pA"))])
        XCTAssertEqual(try names([]), ["s3", "s4", "s5"], "the cascade removed pA's scores from queries too")
    }
}
