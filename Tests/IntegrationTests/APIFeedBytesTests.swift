import Foundation
import RecordModel
import XCTest

/// Over HTTP against the real daemon: the change feed (`records/changes`, `changes/zone`) and
/// `records/lookup` answer each stored record with the same JSON, byte for byte, that the
/// `records/modify` saving it answered.
final class APIFeedBytesTests: DaemonTestCase {
    private func post(_ operation: String, _ token: String, _ body: JSONValue) throws -> [UInt8] {
        let answer = try daemon.request("POST", path(operation), token: token, body: body.serialized())
        XCTAssertEqual(answer.status, 200, "\(operation): \(answer.text.prefix(300))")
        return answer.body
    }

    /// The bytes of the `"records"` array's elements in an answer whose first key is `records`.
    private func recordsArray(_ answer: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        let start = Array(#"{"records":["#.utf8)
        XCTAssertEqual(Array(answer.prefix(start.count)), start, String(decoding: answer.prefix(200), as: UTF8.self), file: file, line: line)
        return Array(answer.dropFirst(start.count))
    }

    func testFeedAndLookupAnswerEachRecordWithTheBytesItsSaveAnswered() throws {
        let token = try makeUser().token
        try createZone("ScorebookData", token)
        let saved = try recordsArray(try post("records/modify", token, modifyBody([
            ("create", record("Game|~|1", "Game", ["name": ["value": #"Ticket "to" Ride\ Europe\#t✓ 🎲"#, "type": "STRING"],
                                                    "players": ["value": 5, "type": "INT64"], "weight": ["value": 2.5, "type": "DOUBLE"],
                                                    "tags": ["value": ["rail", "family"], "type": "STRING_LIST"]])),
            ("create", record("Note|~|1", "Note", ["text": ["value": "one\nline", "type": "STRING"]])),
        ])))
        // `saved` is `A,B]}`: the feed's and the lookup's arrays start with exactly `A,B]`.
        let records = Array(saved.dropLast(1))
        let feed = try recordsArray(try post("records/changes", token, ["zoneID": ["zoneName": "ScorebookData"]]))
        XCTAssertEqual(Array(feed.prefix(records.count)), records, String(decoding: feed, as: UTF8.self))
        let lookup = try recordsArray(try post("records/lookup", token, ["zoneID": ["zoneName": "ScorebookData"],
                                                                         "records": [["recordName": "Game|~|1"], ["recordName": "Note|~|1"]]]))
        XCTAssertEqual(lookup, saved, "the lookup's whole answer is the modify's")

        let zones = try post("changes/zone", token, ["zones": [["zoneID": ["zoneName": "ScorebookData"]]]])
        let entry = try recordsArray(Array(zones.dropFirst(#"{"zones":["#.utf8.count)))
        XCTAssertEqual(Array(entry.prefix(records.count)), records, String(decoding: zones, as: UTF8.self))
        let page = try XCTUnwrap(try JSONValue.parse(zones)["zones"]?.arrayValue?.first)
        XCTAssertEqual(page["moreComing"], false)
        XCTAssertNotNil(page["syncToken"]?.stringValue)
        XCTAssertEqual(page["zoneID"]?["zoneName"], "ScorebookData")
    }

    /// A tombstone in both feeds carries the deletion's stamp as `modified`, written as a record's:
    /// who deleted, when, and from which device (the placeholder when the request named none).
    func testATombstoneInTheFeedsNamesWhoDeleted() throws {
        let user = try makeUser()
        try createZone("ScorebookData", user.token)
        _ = try post("records/modify", user.token, modifyBody([("create", record("Note|~|1", "Note", ["text": ["value": "x", "type": "STRING"]]))]))
        _ = try post("records/modify", user.token, modifyBody([("forceDelete", record("Note|~|1"))]))
        let feed = try post("records/changes", user.token, ["zoneID": ["zoneName": "ScorebookData"]])
        let tombstone = try XCTUnwrap(try JSONValue.parse(feed)["records"]?.arrayValue?.first, String(decoding: feed, as: UTF8.self))
        let timestamp = try XCTUnwrap(tombstone["modified"]?["timestamp"]?.int64Value, String(decoding: feed, as: UTF8.self))
        let expected = #"{"recordName":"Note|~|1","recordType":"Note","deleted":true,"modified":{"timestamp":\#(timestamp),"#
            + #""userRecordName":"\#(user.userRecordName)","deviceID":"_unknownDevice"}}"#
        XCTAssertEqual(Array(try recordsArray(feed).prefix(expected.utf8.count)), Array(expected.utf8), String(decoding: feed, as: UTF8.self))
        let zones = try post("changes/zone", user.token, ["zones": [["zoneID": ["zoneName": "ScorebookData"]]]])
        let entry = try recordsArray(Array(zones.dropFirst(#"{"zones":["#.utf8.count)))
        XCTAssertEqual(Array(entry.prefix(expected.utf8.count)), Array(expected.utf8), String(decoding: zones, as: UTF8.self))
    }

    /// `changes/zone` of one zone (written whole in the store's buffer) and of several (each entry
    /// copied into the answer) give a zone the same entry, byte for byte; a zone that fails is an
    /// entry of its own either way.
    func testOneZonesEntryIsTheSameAloneAndAmongOthersAndAFailingZoneIsAnEntry() throws {
        let token = try makeUser().token
        for zone in ["First", "Second"] {
            try createZone(zone, token)
            _ = try post("records/modify", token, ["zoneID": ["zoneName": .string(zone)], "operations": [
                ["operationType": "create", "record": record("Note|~|\(zone)", "Note", ["text": ["value": .string(zone), "type": "STRING"]])],
            ]])
        }
        let opening = #"{"zones":["#.utf8.count
        let first = Array(try post("changes/zone", token, ["zones": [["zoneID": ["zoneName": "First"]]]]).dropFirst(opening).dropLast(2))
        let second = Array(try post("changes/zone", token, ["zones": [["zoneID": ["zoneName": "Second"]]]]).dropFirst(opening).dropLast(2))
        let both = try post("changes/zone", token, ["zones": [["zoneID": ["zoneName": "First"]], ["zoneID": ["zoneName": "Second"]]]])
        XCTAssertEqual(both, Array(#"{"zones":["#.utf8) + first + Array(",".utf8) + second + Array("]}".utf8), String(decoding: both, as: UTF8.self))
        XCTAssertEqual(try JSONValue.parse(first)["records"]?.arrayValue?.first?["recordName"], "Note|~|First")

        for zones: JSONValue in [[["zoneID": ["zoneName": "Missing"]]], [["zoneID": ["zoneName": "First"]], ["zoneID": ["zoneName": "Missing"]]]] {
            let answer = try JSONValue.parse(try post("changes/zone", token, ["zones": zones]))
            let missing = try XCTUnwrap(answer["zones"]?.arrayValue?.last)
            XCTAssertEqual(missing["serverErrorCode"], "ZONE_NOT_FOUND", "\(answer)")
            XCTAssertEqual(missing["zoneID"]?["zoneName"], "Missing")
            XCTAssertEqual(answer["zones"]?.arrayValue?.count, zones.arrayValue?.count)
        }
    }
}
