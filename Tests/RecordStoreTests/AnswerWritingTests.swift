import RecordModel
import RecordStore
import XCTest

/// A batch's answer writes each change stamp and zone once and copies the bytes for the records
/// that share them (`StoredRecord.AnswerMemo`): what it writes is what each record alone writes.
final class AnswerWritingTests: XCTestCase {
    func testRecordsWrittenThroughOneMemoReadAsEachAlone() throws {
        let zone = ZoneID(zoneName: "Books")
        let shared = ZoneID(zoneName: "Books", ownerRecordName: "_owner\"quoted")
        let first = ChangeStamp(timestamp: 1_700_000_000_000, userRecordName: "_ann", deviceID: "phone")
        let later = ChangeStamp(timestamp: 1_700_000_000_001, userRecordName: "_ann", deviceID: "phone")
        let otherWriter = ChangeStamp(timestamp: 1_700_000_000_001, userRecordName: "_bob", deviceID: nil)
        func stored(_ name: String, created: ChangeStamp, modified: ChangeStamp, zoneID: ZoneID, parent: String? = nil) -> StoredRecord {
            StoredRecord(recordName: name, recordType: "Game", changeTag: "t-\(name)", fieldsJSON: Array(#"{"n":{"value":1,"type":"INT64"}}"#.utf8),
                         parent: parent, created: created, modified: modified, zoneID: zoneID)
        }
        // Runs of equal stamps and zones, then each of them changing on its own.
        let records = [
            stored("a", created: first, modified: first, zoneID: zone),
            stored("b", created: first, modified: first, zoneID: zone),
            stored("c", created: first, modified: later, zoneID: zone),
            stored("d", created: later, modified: otherWriter, zoneID: zone, parent: "a"),
            stored("e", created: otherWriter, modified: otherWriter, zoneID: shared),
            stored("f", created: first, modified: first, zoneID: zone),
        ]
        var memo = StoredRecord.AnswerMemo()
        var together: [UInt8] = [UInt8(ascii: "[")]
        for (index, record) in records.enumerated() {
            if index > 0 { together.append(UInt8(ascii: ",")) }
            record.write(into: &together, desiredKeys: nil, links: nil, memo: &memo)
        }
        together.append(UInt8(ascii: "]"))
        let alone = records.map { record -> JSONValue in
            var out: [UInt8] = []
            record.write(into: &out, desiredKeys: nil, links: nil)
            return try! JSONValue.parse(out)
        }
        XCTAssertEqual(try JSONValue.parse(together), .array(alone))
        let parsed = try XCTUnwrap(try JSONValue.parse(together).arrayValue)
        XCTAssertEqual(parsed[3]["modified"]?["userRecordName"]?.stringValue, "_bob")
        XCTAssertEqual(parsed[4]["zoneID"]?["ownerRecordName"]?.stringValue, "_owner\"quoted")
        XCTAssertNil(parsed[5]["zoneID"]?["ownerRecordName"], "back to the plain zone")
        XCTAssertEqual(parsed[5]["created"]?["timestamp"], .int(1_700_000_000_000))
    }

    /// The test each record of an answer passes before its fields are parsed for asset links:
    /// found wherever the marker stands, not fooled by its pieces.
    func testAnAssetMarkerIsFoundWhereverItStands() {
        func holds(_ text: String) -> Bool { AssetFields.mayHoldAssets(Array(text.utf8)) }
        XCTAssertTrue(holds(#""ASSETID""#), "the marker alone")
        XCTAssertTrue(holds(#"{"p":{"value":{"fileChecksum":"x"},"type":"ASSETID"}}"#))
        XCTAssertTrue(holds(#"{"p":{"value":[],"type":"ASSETID_LIST"},"A":{"value":"AAA","type":"STRING"}}"#))
        XCTAssertTrue(holds(#"AA"A"ASSETID"#), "after near misses")
        XCTAssertTrue(holds(#"{"n":{"value":"ASSETID","type":"STRING"}}"#), "a value spelled so may hold one: the parse decides")
        XCTAssertFalse(holds(#"{"t":{"value":1,"type":"TIMESTAMP"},"l":{"value":{},"type":"LOCATION"}}"#))
        XCTAssertFalse(holds(#"ASSETID""#), "no opening quote")
        XCTAssertFalse(holds(#""ASSETI"#), "cut short")
        XCTAssertFalse(holds(""))
        XCTAssertFalse(holds("A"))
    }
}
