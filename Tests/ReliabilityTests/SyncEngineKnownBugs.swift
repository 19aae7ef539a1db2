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
/// exchange, what the contract expects and what happens.
final class SyncEngineKnownBugs: XCTestCase {
    /// A record whose creation reached the server but whose answer was lost (a dropped
    /// connection, or the CLI killed mid-sync) comes back to life after another machine
    /// deletes it.
    ///
    /// Exchange: machine A saves a new Person and syncs; the server applies A's
    /// `records/modify` `create` but the answer never reaches A (A's outbox keeps the entry,
    /// with no server copy). Machine B syncs (gets the Person), deletes it and syncs (the server
    /// deletes it; its change feed now holds a tombstone). A syncs again.
    /// Expected: the Person stays deleted everywhere — DESIGN: "A record deleted on the server
    /// stays deleted unless the user recreates it"; CONTRACT §4.2: "nothing is lost and nothing
    /// is duplicated, even if the process is killed mid-sync".
    /// Actual: A resends `create` (it has no server copy), the server accepts it because the
    /// name is free again, the Person is live on the server again, and B receives it back on its
    /// next sync. (A fetching before resending a create whose answer it never saw, or the server
    /// refusing `create` over a tombstone, would avoid it.)
    func testACreateWhoseAnswerWasLostDoesNotResurrectTheRecordAfterAnotherMachineDeletesIt() async throws {
        let root = FaultScenario.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try SQLiteRecordStore(directory: root.appendingPathComponent("server").path)
        defer { server.close() }
        let api = InProcessTransport(api: RecordAPI(store: server, requestsPerSecond: 1_000_000, logger: FaultScenario.quietLogger))
        let token = try server.createUser(name: "resurrection").token
        let clock = EditClock()
        let log = EditLog()
        let noFaults = FaultRates(requestLost: 0, responseLost: 0, duplicated: 0, throttled: 0, tryAgainLater: 0, pollDelayed: 0,
                                  pollReordered: 0)
        let a = try SyncMachine(index: 0, directory: root, api: api, token: token, seed: 1, rates: noFaults, clock: clock, log: log)
        let b = try SyncMachine(index: 1, directory: root, api: api, token: token, seed: 2, rates: noFaults, clock: clock, log: log)
        try await a.engine.sync()
        try await b.engine.sync()

        let person = Person(firstName: "Ann", modificationDate: clock.now())
        try a.create([person], requiring: [])
        a.transport.rates.responseLost = 1  // every answer to A is lost from now on
        do {
            try await a.engine.sync()
            XCTFail("the sync cannot succeed without answers")
        } catch {}
        a.transport.rates.responseLost = 0
        let afterCreate = try await FaultScenario.serverRecords(api, token: token)
        XCTAssertNotNil(afterCreate[person.recordName], "the create reached the server")

        try await b.engine.sync()
        XCTAssertNotNil(try b.store.record(named: person.recordName), "B received the Person")
        try b.delete(person.recordName)
        try await b.engine.sync()
        let afterDelete = try await FaultScenario.serverRecords(api, token: token)
        XCTAssertNil(afterDelete[person.recordName], "B's deletion reached the server")

        try await a.engine.sync()
        try await b.engine.sync()
        let onServer = try await FaultScenario.serverRecords(api, token: token)
        XCTAssertNil(onServer[person.recordName], "the Person B deleted is live on the server again")
        XCTAssertNil(try a.store.record(named: person.recordName), "A still shows the Person B deleted")
        XCTAssertNil(try b.store.record(named: person.recordName), "B got the Person it deleted back")
    }
}
