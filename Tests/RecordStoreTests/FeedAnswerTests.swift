import RecordModel
import RecordStore
import XCTest

/// Feed pages and lookups are written as record JSON from the store's rows (`RecordJSONWriter`):
/// each record is the JSON, byte for byte, that the answer saving it carried, and the page reads
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

    private func feedPage(from token: String? = nil, limit: Int = 400, types: Set<String>? = nil,
                          keys: Set<String>? = nil) throws -> SerializedRecordPage
    {
        let scope = dev!
        return try store.wait {
            try await $0.zoneChangesJSON(scope, zone: .default, syncToken: token, resultsLimit: limit, recordTypes: types,
                                         options: RecordJSONOptions(desiredKeys: keys, links: nil))
        }
    }

    /// The page's records parsed, as the API's answer holds them.
    private func entries(_ page: SerializedRecordPage) throws -> [JSONValue] {
        try XCTUnwrap(try JSONValue.parse([UInt8(ascii: "[")] + page.records.json + [UInt8(ascii: "]")]).arrayValue)
    }

    func testFeedAndLookupCarryEachRecordAsItsSaveAnsweredIt() throws {
        let saved = try saveVariedRecords()
        let records = savedRecordsJSON(saved)
        let feed = try feedPage()
        XCTAssertEqual(feed.records.json, records, "the feed's records are the saved JSON: \(String(decoding: feed.records.json, as: UTF8.self))")
        XCTAssertEqual(feed.records.count, 3)
        let expected = try store.zoneChanges(dev, zone: .default, syncToken: nil, resultsLimit: 400, recordTypes: nil)
        XCTAssertEqual(feed.syncToken, expected.syncToken)
        XCTAssertFalse(feed.moreComing)
        XCTAssertEqual(feed.zoneID, saved[0].zoneID)

        let scope = dev!
        let names = saved.map(\.recordName) + ["missing"]
        let lookup = try store.wait {
            try await $0.lookupRecordsJSON(scope, zone: .default, recordNames: names, options: RecordJSONOptions(desiredKeys: nil, links: nil))
        }
        XCTAssertEqual(Array(lookup.json.prefix(records.count + 1)), records + [UInt8(ascii: ",")],
                       "the lookup's records are the saved JSON, in the order asked")
        XCTAssertEqual(lookup.count, 4)
        let entries = try XCTUnwrap(try JSONValue.parse([UInt8(ascii: "[")] + lookup.json + [UInt8(ascii: "]")]).arrayValue)
        XCTAssertEqual(entries.count, 4)
        XCTAssertEqual(entries[3]["serverErrorCode"], "NOT_FOUND")
        XCTAssertEqual(entries[3]["recordName"], "missing")
    }

    func testFeedAnswerPagesTombstonesTypesAndKeysAsTheFeedDoes() throws {
        try saveVariedRecords()
        try modify(dev, [(.forceDelete, record("empty"))])
        // The tombstone carries the deletion's stamp as `modified`: who deleted, from which device.
        let tombstone = Array(#"{"recordName":"empty","recordType":"Other","deleted":true,"modified":{"timestamp":"#.utf8)
        let whole = try feedPage().records.json
        XCTAssertNotNil(whole.withUnsafeBufferPointer { ByteSearch.offset(past: tombstone, in: $0, from: 0) },
                        "the tombstone: \(String(decoding: whole, as: UTF8.self))")
        let deletion = try XCTUnwrap(try entries(try feedPage()).first { $0["deleted"] == true })
        XCTAssertEqual(deletion["modified"]?["userRecordName"]?.stringValue, alice.recordName)
        XCTAssertEqual(deletion["modified"]?["deviceID"], "test-device")

        // Pages of one follow moreComing through every change, in the feed's order.
        var token: String?
        var names: [String] = []
        for _ in 0..<10 {
            let page = try feedPage(from: token, limit: 1)
            names += try entries(page).compactMap { $0["recordName"]?.stringValue }
            token = page.syncToken
            if !page.moreComing { break }
        }
        XCTAssertEqual(names, ["plain", "child|~|1", "empty"])

        let notes = try entries(try feedPage(types: ["Note"], keys: ["count", "absent"]))
        XCTAssertEqual(notes.compactMap { $0["recordName"]?.stringValue }, ["plain", "child|~|1"], "only the types asked")
        XCTAssertEqual(notes[0]["fields"]?.objectValue.map { Array($0.keys) }, ["count"], "only the keys asked")
        XCTAssertEqual(notes[0]["fields"]?["count"]?["value"], -42)
        XCTAssertEqual(notes[1]["fields"], [:])
        XCTAssertEqual(notes[1]["parent"]?["recordName"], "plain")
    }
}
