import Foundation
import RecordModel
import RecordServer
import RecordStore
import XCTest

/// The push hub over a real store: one read per commit serves every waiter of a database, and a
/// waiter is woken by any commit that has something for it, whatever the other waiters' cursors.
final class PushHubTests: SubscriptionStoreTestCase {
    /// A waiter far behind (600 notifications, more than one read's limit) and one up to date
    /// wait together; one more commit lands. Both must be woken with their share: the one ahead
    /// gets the new notification at once, not at its timeout.
    func testAWaiterAheadOfAFullBatchIsWokenByTheCommit() throws {
        let hub = PushHub(store: store.base)
        try subscribe(querySubscription("things", type: "Thing"))
        for _ in 0..<2 {
            try modify(ZoneID.defaultZoneName, (0..<300).map { _ in (.create, wireRecord(newName("Thing"), "Thing")) })
        }
        let pending = try store.notifications(databaseID: databaseID, after: cursor, limit: 1000)
        XCTAssertEqual(pending.count, 600)
        let latest = try XCTUnwrap(pending.last?.id)

        // The hub has seen no commit yet (generation 0), so neither wait reads on its own: both
        // wait for the next commit, as waiters registered just before a commit do.
        let behind = Task { await hub.wait(databaseID: databaseID, after: cursor, knownGeneration: 0, timeout: .seconds(20)) }
        let ahead = Task { await hub.wait(databaseID: databaseID, after: latest, knownGeneration: 0, timeout: .seconds(20)) }
        let registered = Date().addingTimeInterval(5)
        while hub.waiterCount < 2, Date() < registered { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(hub.waiterCount, 2)

        let newest = newName("Thing")
        try create(ZoneID.defaultZoneName, newest, "Thing")
        let started = Date()
        hub.commitLanded([databaseID])
        let aheadDelivery = try blockingResult(of: ahead)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "woken by the commit, not by its 20 s timeout")
        XCTAssertEqual(aheadDelivery.notifications.count, 1)
        XCTAssertGreaterThan(aheadDelivery.notifications.first?.id ?? 0, latest)
        let behindDelivery = try blockingResult(of: behind)
        XCTAssertEqual(behindDelivery.notifications.first?.id, pending.first?.id, "the waiter behind starts at its cursor")
        XCTAssertNil(behindDelivery.generation, "a cut batch makes the next wait read again")
        hub.close()
    }

    private func blockingResult(of task: Task<PushHub.Delivery, Never>) throws -> PushHub.Delivery {
        let box = DeliveryBox()
        let done = DispatchSemaphore(value: 0)
        Task {
            box.delivery = await task.value
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        return try XCTUnwrap(box.delivery)
    }
}

private final class DeliveryBox: @unchecked Sendable {
    var delivery: PushHub.Delivery?
}
