import RecordModel
import RecordStore
import XCTest

/// A tombstone in the change feed says who deleted: its `modified` is the deletion's stamp, for
/// the record deleted and for the records a `DELETE_SELF` cascade took with it, whoever reads the
/// feed (the zone's owner, or a participant through the shared database).
final class TombstoneDeleterTests: StoreTestCase {
    let zone = ZoneID(zoneName: "Friday")

    func testATombstoneCarriesTheDeleterOfItsRecordAndOfTheCascade() throws {
        let bob = try store.createUser(name: "bob", email: "bob@example.com").user
        let ownerZone = zone
        _ = try store.createZone(dev, zoneName: ownerZone.zoneName)
        let match = try save(dev, zone: ownerZone, record("m", "Match", ["notes": field("friday", "STRING")]))
        try save(dev, zone: ownerZone, record("p", "Player", ["match": ref("m", .deleteSelf)]))
        let share = try save(dev, zone: ownerZone, [
            "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "publicPermission": "NONE",
            "fields": ["cloudkit.title": ["value": "Friday"]],
            "participants": [["type": "USER", "permission": "READ_WRITE",
                              "userIdentity": ["lookupInfo": ["userRecordName": .string(bob.recordName)]]]],
        ])
        let guid = try XCTUnwrap(try JSONValue.parse(share.json().serialized())["shortGUID"]?.stringValue)
        guard case .success = try store.resolveShares(try scope(bob, .development), [guid], accept: true).first else {
            XCTFail("bob could not accept")
            throw StoreTestFailure()
        }
        let bobShared = DatabaseScope(user: bob, container: Self.container, environment: .development, kind: .shared)
        let sharedZone = ZoneID(zoneName: ownerZone.zoneName, ownerRecordName: alice.recordName)
        clock.advance(milliseconds: 5_000)
        try modify(bobShared, zone: sharedZone, [(.forceDelete, record("m"))])

        // The feed as records: both tombstones name bob, his device and the time of his deletion.
        let page = try store.zoneChanges(dev, zone: ownerZone, syncToken: nil, resultsLimit: 400, recordTypes: nil)
        var stamps: [String: ChangeStamp] = [:]
        for case .deleted(let name, _, let modified) in page.changes {
            stamps[name] = try XCTUnwrap(modified, "\(name)'s tombstone names no deleter")
        }
        XCTAssertEqual(Set(stamps.keys), ["m", "p"], "the match and, by its cascade, its player")
        for (name, stamp) in stamps {
            XCTAssertEqual(stamp.userRecordName, bob.recordName, name)
            XCTAssertEqual(stamp.deviceID, "test-device", name)
            XCTAssertGreaterThanOrEqual(stamp.timestamp, match.modified.timestamp + 5_000, name)
        }

        // The feed as JSON, to the owner and to the participant: the stamp written as a record's `modified`.
        let stamp = try XCTUnwrap(stamps["m"])
        let expected = #"{"recordName":"m","recordType":"Match","deleted":true,"modified":{"timestamp":\#(stamp.timestamp),"#
            + #""userRecordName":"\#(bob.recordName)","deviceID":"test-device"}}"#
        for (reader, readerZone) in [(dev!, ownerZone), (bobShared, sharedZone)] {
            let json = try store.wait {
                try await $0.zoneChangesJSON(reader, zone: readerZone, syncToken: nil, resultsLimit: 400, recordTypes: nil,
                                             options: RecordJSONOptions(desiredKeys: nil, links: nil))
            }.records.json
            let text = String(decoding: json, as: UTF8.self)
            XCTAssertTrue(text.contains(expected), "\(reader.kind): \(text)")
            let entries = try XCTUnwrap(try JSONValue.parse(Array("[".utf8) + json + Array("]".utf8)).arrayValue)
            let player = try XCTUnwrap(entries.first { $0["recordName"] == "p" }, text)
            XCTAssertEqual(player["deleted"], true)
            XCTAssertEqual(player["modified"]?["userRecordName"]?.stringValue, bob.recordName, "the cascade's tombstone: \(text)")
        }
    }
}
