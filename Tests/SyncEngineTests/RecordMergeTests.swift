import RecordModel
import SyncEngine
import XCTest

final class RecordMergeTests: XCTestCase {
    func record(_ fields: [String: FieldValue], modified: Int64) -> Record {
        var all = fields
        all["modificationDate"] = .timestamp(milliseconds: modified)
        return Record(recordName: "Game|~|A", recordType: "Game", fields: all)
    }

    func testFieldsChangedOnOneSideEachAreBothKept() {
        let ancestor = record(["name": .string("Catan"), "lowScoreWins": .int64(0)], modified: 100).fields
        let local = record(["name": .string("Catan 2"), "lowScoreWins": .int64(0)], modified: 200)
        let server = record(["name": .string("Catan"), "lowScoreWins": .int64(1)], modified: 300)
        let result = RecordMerge.merge(ancestor: ancestor, local: local, server: server)
        XCTAssertEqual(result.fields["name"], .string("Catan 2"))
        XCTAssertEqual(result.fields["lowScoreWins"], .int64(1))
        XCTAssertEqual(result.conflictingFields, [])
        XCTAssertTrue(result.needsUpload)
        XCTAssertTrue(result.changedLocally)
        XCTAssertEqual(result.fields["modificationDate"], .timestamp(milliseconds: 300))
    }

    func testSameFieldGoesToTheNewerEditWhicheverSideItIsOn() {
        let ancestor = record(["name": .string("Catan")], modified: 100).fields
        let older = record(["name": .string("Older")], modified: 200)
        let newer = record(["name": .string("Newer")], modified: 300)
        let localNewer = RecordMerge.merge(ancestor: ancestor, local: newer, server: older)
        XCTAssertEqual(localNewer.fields["name"], .string("Newer"))
        XCTAssertEqual(localNewer.conflictingFields, ["name"])
        XCTAssertTrue(localNewer.needsUpload)
        let serverNewer = RecordMerge.merge(ancestor: ancestor, local: older, server: newer)
        XCTAssertEqual(serverNewer.fields["name"], .string("Newer"))
        XCTAssertFalse(serverNewer.needsUpload)
        XCTAssertTrue(serverNewer.changedLocally)
    }

    func testTiesAreBrokenTheSameWayOnBothMachines() {
        let ancestor = record(["name": .string("Catan")], modified: 100).fields
        let first = record(["name": .string("Alpha")], modified: 500)
        let second = record(["name": .string("Beta")], modified: 500)
        let onMachineA = RecordMerge.merge(ancestor: ancestor, local: first, server: second)
        let onMachineB = RecordMerge.merge(ancestor: ancestor, local: second, server: first)
        XCTAssertEqual(onMachineA.fields, onMachineB.fields)
    }

    func testARemovalOnOneSideIsKept() {
        let ancestor = record(["name": .string("Catan"), "notes": .string("fun")], modified: 100).fields
        let local = record(["name": .string("Catan")], modified: 200)
        let server = record(["name": .string("Catan"), "notes": .string("fun")], modified: 100)
        let result = RecordMerge.merge(ancestor: ancestor, local: local, server: server)
        XCTAssertNil(result.fields["notes"])
        XCTAssertTrue(result.needsUpload)
    }

    func testIdenticalCopiesNeedNothing() {
        let copy = record(["name": .string("Catan")], modified: 100)
        let result = RecordMerge.merge(ancestor: nil, local: copy, server: copy)
        XCTAssertFalse(result.needsUpload)
        XCTAssertFalse(result.changedLocally)
        XCTAssertEqual(result.conflictingFields, [])
    }

    func testWithoutAncestorEveryDifferenceIsSettledByDate() {
        let local = record(["name": .string("Mine"), "lowScoreWins": .int64(1)], modified: 100)
        let server = record(["name": .string("Theirs")], modified: 200)
        let result = RecordMerge.merge(ancestor: nil, local: local, server: server)
        XCTAssertEqual(result.fields["name"], .string("Theirs"))
        XCTAssertNil(result.fields["lowScoreWins"])
        XCTAssertEqual(result.conflictingFields, ["name", "lowScoreWins"])
    }

    func testDifferenceListsChangedAndRemovedFields() {
        let base: [String: FieldValue] = ["a": .string("1"), "b": .string("2"), "c": .string("3")]
        let target: [String: FieldValue] = ["a": .string("1"), "b": .string("two"), "d": .string("4")]
        let difference = RecordMerge.difference(from: base, to: target)
        XCTAssertEqual(difference.changed, ["b": .string("two"), "d": .string("4")])
        XCTAssertEqual(difference.removed, ["c"])
    }
}
