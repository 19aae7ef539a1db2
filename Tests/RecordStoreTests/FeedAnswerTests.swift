import RecordModel
import RecordStore
import XCTest

/// Feed pages and lookups are written from the store's rows (`RecordAnswerWriter`): each record
/// is the JSON, byte for byte, that the answer saving it carried, and the page's own keys read
/// as the records' feed always did.
final class FeedAnswerTests: StoreTestCase {
    /// Records whose fields need escaping and every common type, a child with a parent, and the
    /// device of the saving request.
    @discardableResult
    private func saveVariedRecords() throws -> [StoredRecord] {
        let results = try modify(dev, [
            (.create, record("plain", "Note", ["text": field(#"quoted "words", a back\slash, a tab\#tand a line"#, "STRING"),
                                                "accent": field("café ünïcödé ✓ 🎲", "STRING"), "count": field(-42, "INT64"),
                                                "ratio": field(0.25, "DOUBLE"), "tags": field(["a", "b\"c"], "STRING_LIST"),
                                                "when": field(1_700_000_000_123, "TIMESTAMP")])),
            (.create, record("child|~|1", "Note", ["text": field("under plain", "STRING")], parent: "plain")),
            (.create, record("empty", "Other")),
        ])
        return try results.map { result -> StoredRecord in
            guard case .saved(let stored) = result else { throw StoreTestFailure() }
            return stored
        }
    }

    /// The records array of an answer `{"records":[…]}` made by the write path of `records/modify`.
    private func savedRecordsJSON(_ records: [StoredRecord]) -> [UInt8] {
        var out: [UInt8] = []
        for (index, record) in records.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            record.write(into: &out, desiredKeys: nil, links: nil)
        }
        return out
    }

    private func feedAnswer(from token: String? = nil, limit: Int = 400, types: Set<String>? = nil,
                            keys: Set<String>? = nil) throws -> [UInt8]
    {
        let scope = dev!
        return try store.wait {
            try await $0.zoneChangesAnswer(scope, zone: .default, syncToken: token, resultsLimit: limit, recordTypes: types,
                                           options: RecordAnswerOptions(desiredKeys: keys, links: nil))
        }
    }

    func testFeedAndLookupCarryEachRecordAsItsSaveAnsweredIt() throws {
        let saved = try saveVariedRecords()
        let records = savedRecordsJSON(saved)
        let feed = try feedAnswer()
        let start = Array(#"{"records":["#.utf8)
        XCTAssertEqual(Array(feed.prefix(start.count + records.count + 2)), start + records + Array("],".utf8),
                       "the feed's records are the saved JSON: \(String(decoding: feed, as: UTF8.self))")
        let page = try XCTUnwrap(try JSONValue.parse(feed).objectValue)
        let expected = try store.zoneChanges(dev, zone: .default, syncToken: nil, resultsLimit: 400, recordTypes: nil)
        XCTAssertEqual(page["syncToken"]?.stringValue, expected.syncToken)
        XCTAssertEqual(page["moreComing"], false)
        XCTAssertEqual(page["zoneID"], saved[0].zoneID.json)
        XCTAssertEqual(Set(page.keys), ["records", "zoneID", "syncToken", "moreComing"])

        let scope = dev!
        let names = saved.map(\.recordName) + ["missing"]
        let lookup = try store.wait {
            try await $0.lookupRecordsAnswer(scope, zone: .default, recordNames: names, options: RecordAnswerOptions(desiredKeys: nil, links: nil))
        }
        XCTAssertEqual(Array(lookup.prefix(start.count + records.count + 1)), start + records + [UInt8(ascii: ",")],
                       "the lookup's records are the saved JSON, in the order asked")
        let entries = try XCTUnwrap(try JSONValue.parse(lookup)["records"]?.arrayValue)
        XCTAssertEqual(entries.count, 4)
        XCTAssertEqual(entries[3]["serverErrorCode"], "NOT_FOUND")
        XCTAssertEqual(entries[3]["recordName"], "missing")
    }

    func testFeedAnswerPagesTombstonesTypesAndKeysAsTheFeedDoes() throws {
        try saveVariedRecords()
        try modify(dev, [(.forceDelete, record("empty"))])
        let tombstone = Array(#"{"recordName":"empty","recordType":"Other","deleted":true}"#.utf8)
        let whole = try feedAnswer()
        XCTAssertNotNil(whole.withUnsafeBufferPointer { ByteSearch.offset(past: tombstone, in: $0, from: 0) },
                        "the tombstone: \(String(decoding: whole, as: UTF8.self))")

        // Pages of one follow moreComing through every change, in the feed's order.
        var token: String?
        var names: [String] = []
        for _ in 0..<10 {
            let page = try JSONValue.parse(try feedAnswer(from: token, limit: 1))
            names += (page["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue }
            token = page["syncToken"]?.stringValue
            if page["moreComing"] == false { break }
        }
        XCTAssertEqual(names, ["plain", "child|~|1", "empty"])

        let notes = try JSONValue.parse(try feedAnswer(types: ["Note"], keys: ["count", "absent"]))
        let entries = try XCTUnwrap(notes["records"]?.arrayValue)
        XCTAssertEqual(entries.compactMap { $0["recordName"]?.stringValue }, ["plain", "child|~|1"], "only the types asked")
        XCTAssertEqual(entries[0]["fields"]?.objectValue.map { Array($0.keys) }, ["count"], "only the keys asked")
        XCTAssertEqual(entries[0]["fields"]?["count"]?["value"], -42)
        XCTAssertEqual(entries[1]["fields"], [:])
        XCTAssertEqual(entries[1]["parent"]?["recordName"], "plain")
    }
}
