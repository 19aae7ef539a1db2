import RecordClient
import RecordModel
import SyncEngine
import XCTest

final class ChangeApplyPlannerTests: XCTestCase {
    func record(_ name: String, owner: String? = nil) -> Record {
        var fields: [String: FieldValue] = [:]
        if let owner { fields["owner"] = .reference(Reference(recordName: owner, action: .deleteSelf)) }
        return Record(recordName: name, recordType: "T", fields: fields, recordChangeTag: "t")
    }

    func testChildrenArrivingFirstAreAppliedAfterTheirParents() {
        let plan = ChangeApplyPlanner.plan(
            changes: [.saved(record("score", owner: "player")), .saved(record("player", owner: "match")), .saved(record("match"))],
            waiting: [], isPresentLocally: { _ in false })
        XCTAssertEqual(plan.saves.map(\.recordName), ["match", "player", "score"])
        XCTAssertEqual(plan.waiting, [])
    }

    func testAChildWhoseParentHasNotArrivedIsKeptWaitingAndAppliedLater() {
        let first = ChangeApplyPlanner.plan(changes: [.saved(record("player", owner: "match"))], waiting: [],
                                            isPresentLocally: { _ in false })
        XCTAssertEqual(first.saves, [])
        XCTAssertEqual(first.waiting.map(\.missingRecordName), ["match"])
        let second = ChangeApplyPlanner.plan(changes: [.saved(record("match"))], waiting: first.waiting.map(\.record),
                                             isPresentLocally: { _ in false })
        XCTAssertEqual(second.saves.map(\.recordName), ["match", "player"])
    }

    func testParentsHeldLocallyCountAndTombstonesRemoveWaitingRecords() {
        let plan = ChangeApplyPlanner.plan(
            changes: [.saved(record("player", owner: "match")), .deleted(recordName: "orphan", recordType: nil)],
            waiting: [record("orphan", owner: "gone")], isPresentLocally: { $0 == "match" })
        XCTAssertEqual(plan.saves.map(\.recordName), ["player"])
        XCTAssertEqual(plan.deletions, ["orphan"])
        XCTAssertEqual(plan.waiting, [])
    }

    func testAParentDeletedInThePageIsNotAvailable() {
        let plan = ChangeApplyPlanner.plan(changes: [.deleted(recordName: "match", recordType: "Match"),
                                                     .saved(record("player", owner: "match"))],
                                           waiting: [], isPresentLocally: { _ in true })
        XCTAssertEqual(plan.saves, [])
        XCTAssertEqual(plan.waiting.map(\.record.recordName), ["player"])
    }

    func testNoneReferencesMayDangle() {
        var loose = record("note")
        loose.fields["about"] = .reference(Reference(recordName: "nowhere", action: .none))
        let plan = ChangeApplyPlanner.plan(changes: [.saved(loose)], waiting: [], isPresentLocally: { _ in false })
        XCTAssertEqual(plan.saves.map(\.recordName), ["note"])
    }
}
