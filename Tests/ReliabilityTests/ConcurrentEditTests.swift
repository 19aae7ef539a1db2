import Foundation
import RecordClient
import RecordModel
import RecordServer
import RecordStore
@testable import Scorebook
import SyncEngine
import XCTest

/// A sync and a local edit of the same store in two processes (`scorebook sync --watch` runs
/// all along while the user edits): the edit must never be undone by what the sync had read.
/// Found by the fault-injection runs (FaultInjectionTests, seed 544 of 1000), now fixed.
final class ConcurrentEditTests: XCTestCase {
    /// Exchange: machine A saves a new Person (queued, never sent). A sync of A's store starts
    /// and builds its `records/modify` batch: `create` of the Person. Before the sync records
    /// the send attempt (`markAttempted`, its first write), the user deletes the Person in
    /// another process; the deletion sees a record never sent (no server copy, `attempts` 0), so
    /// it drops the outbox entry and queues no deletion.
    /// Expected: the Person stays deleted, on A and on the server ("nothing is
    /// lost"; the client's outbox is durable).
    /// The bug: the sync sent the `create` it had built and the fetch that followed brought the
    /// Person back everywhere. Now `markAttempted` sends only entries still queued as built (a
    /// deletion committed after it sees the attempt and queues its own `delete`).
    /// Reproduced every time by holding A's SQLite write lock from a second connection while
    /// the sync builds its batch.
    func testADeletionWhileASyncBuildsItsBatchIsNotUndone() async throws {
        let testbed = try await SyncTestbed(user: "racing")
        defer { testbed.close() }
        let clock = testbed.clock
        let a = try testbed.machine(0)
        try await a.engine.sync()  // the zone exists; nothing queued
        let person = Person(firstName: "Ann", modificationDate: clock.now())
        try a.create([person], requiring: [])

        // "Another process": a second connection to A's store, holding the write lock while the
        // sync reads and builds its batch, then deleting the Person and committing.
        let otherProcess = try LocalRecordStore(path: a.store.path)
        let locked = DispatchSemaphore(value: 0)
        let committed = DispatchSemaphore(value: 0)
        let deletedNames = SleepBox()
        let deleter = Thread {
            do {
                let deleted = try otherProcess.edit { editor in
                    locked.signal()
                    Thread.sleep(forTimeInterval: 0.5)  // the sync has built its batch and waits for the lock
                    return try editor.delete(recordNamed: person.recordName)
                }
                deletedNames.add(Double(deleted.count))
            } catch {
                XCTFail("the deletion failed: \(error)")
            }
            committed.signal()
        }
        deleter.start()
        XCTAssertEqual(locked.wait(timeout: .now() + 5), .success)
        try await a.engine.sync()
        XCTAssertEqual(committed.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(deletedNames.total, 1, "the other process deleted the Person")

        try await a.engine.sync()
        let onServer = try await testbed.serverRecords()
        XCTAssertNil(onServer[person.recordName], "the Person deleted on A is live on the server")
        XCTAssertNil(try a.store.record(named: person.recordName), "the Person deleted on A is back in A's store")
    }
}
