import SyncEngine
import XCTest

final class OutboxPlannerTests: XCTestCase {
    func save(_ name: String, _ sequence: Int64, after dependencies: [String] = []) -> PendingChange {
        PendingChange(recordName: name, recordType: "T", operation: .save, sequence: sequence, dependencies: dependencies)
    }

    func testParentsComeBeforeChildrenWhateverTheEditOrder() {
        let changes = [
            save("score", 1, after: ["player"]), save("player", 2, after: ["match", "person"]),
            save("match", 3, after: ["game"]), save("person", 4), save("game", 5),
            PendingChange(recordName: "old", recordType: "T", operation: .delete, sequence: 0),
        ]
        let order = OutboxPlanner.order(changes).map(\.recordName)
        XCTAssertEqual(order.last, "old", "deletions go last")
        for (child, parent) in [("score", "player"), ("player", "match"), ("player", "person"), ("match", "game")] {
            XCTAssertLessThan(order.firstIndex(of: parent)!, order.firstIndex(of: child)!, "\(parent) before \(child)")
        }
    }

    func testDependenciesAlreadyOnTheServerDoNotDelay() {
        let order = OutboxPlanner.order([save("b", 1, after: ["elsewhere"]), save("a", 2)]).map(\.recordName)
        XCTAssertEqual(order, ["b", "a"], "edit order when nothing pending is depended on")
    }

    func testBatchesHoldAtMostTheLimitAndKeepParentsInEarlierBatches() {
        var changes: [PendingChange] = []
        for index in 0..<450 { changes.append(save("child\(index)", Int64(index), after: ["parent\(index)"])) }
        for index in 0..<450 { changes.append(save("parent\(index)", Int64(1000 + index))) }
        let batches = OutboxPlanner.batches(changes, limit: 400)
        XCTAssertEqual(batches.map(\.count), [400, 400, 100])
        var position: [String: Int] = [:]
        for (batchIndex, batch) in batches.enumerated() {
            for (offset, change) in batch.enumerated() { position[change.recordName] = batchIndex * 1000 + offset }
        }
        for index in 0..<450 { XCTAssertLessThan(position["parent\(index)"]!, position["child\(index)"]!) }
    }

    func testADependencyCycleStillProducesEveryEntryOnce() {
        let order = OutboxPlanner.order([save("a", 1, after: ["b"]), save("b", 2, after: ["a"]), save("c", 3, after: ["c"])])
        XCTAssertEqual(Set(order.map(\.recordName)), ["a", "b", "c"])
        XCTAssertEqual(order.count, 3)
    }
}
