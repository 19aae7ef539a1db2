import Foundation
import RecordClient
import RecordModel
import RecordServer
import RecordStore
@testable import Scorebook
import SyncEngine
import XCTest

/// Sync-engine behaviour that breaks the contract, found by the fault-injection runs
/// (FaultInjectionTests). Each test fails until its bug is fixed; the doc comment gives the
/// exchange, what the contract expects and what happens. Fixed ones move to LostAnswerTests.
final class SyncEngineKnownBugs: XCTestCase {
    /// A record deleted on this machine while a sync of the same store is about to send its
    /// creation comes back to life: the deletion is silently undone.
    ///
    /// Exchange: machine A saves a new Person (queued, never sent). A sync of A's store starts
    /// (as `scorebook sync --watch` runs all along in one process while the user edits in
    /// another) and builds its `records/modify` batch: `create` of the Person. Before the sync
    /// records the send attempt (`markAttempted`, its first write), the user deletes the Person
    /// in another process. Then the sync goes on: it sends the `create` and fetches.
    /// Expected: the Person stays deleted, on A and on the server (a local deletion is a change
    /// like any other; CONTRACT §4.2 "nothing is lost"; DESIGN "the client's outbox is durable").
    /// Actual: the deletion saw a record never sent (no server copy, `attempts` 0), so it dropped
    /// the outbox entry and queued no deletion; the sync then sent the `create` it had built, the
    /// server saved the Person, `acknowledgeSave` stored its server copy, and the fetch that
    /// follows brings the Person back into A's store as a remote record — live everywhere. Found
    /// in 1 seed of 1000 (seed 544, the watcher's sync racing the main loop's delete); reproduced
    /// here by holding A's SQLite write lock from a second connection while the sync builds its
    /// batch. (Checking, when acknowledging a save, that the record still exists locally — and
    /// queueing a deletion if not — would close it.)
    func testADeletionWhileASyncBuildsItsBatchIsNotUndone() async throws {
        let root = FaultScenario.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try SQLiteRecordStore(directory: root.appendingPathComponent("server").path)
        defer { server.close() }
        let api = InProcessTransport(api: RecordAPI(store: server, requestsPerSecond: 1_000_000, logger: FaultScenario.quietLogger))
        let token = try server.createUser(name: "racing").token
        let clock = EditClock()
        let noFaults = FaultRates(requestLost: 0, responseLost: 0, duplicated: 0, throttled: 0, tryAgainLater: 0, pollDelayed: 0,
                                  pollReordered: 0)
        let a = try SyncMachine(index: 0, directory: root, api: api, token: token, seed: 1, rates: noFaults, clock: clock, log: EditLog())
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
        let onServer = try await FaultScenario.serverRecords(api, token: token)
        XCTAssertNil(onServer[person.recordName], "the Person deleted on A is live on the server")
        XCTAssertNil(try a.store.record(named: person.recordName), "the Person deleted on A is back in A's store")
    }
}
