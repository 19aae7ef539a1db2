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
    /// A field edited back to its earlier value after a send whose answer was lost takes the
    /// lost write's value: the machine's own last edit is lost.
    ///
    /// Exchange: machine A has a Person without a last name, in sync with the server. A sets
    /// `lastName` to "Lee" and syncs; the server applies the `records/modify` `update` but the
    /// answer never reaches A (A's server copy, the merge ancestor, still has no last name). A
    /// then clears `lastName` again (its latest edit) and syncs with no more faults.
    /// Expected: the Person has no last name on the server and on A — only A ever edited the
    /// field, and its latest edit wins (DESIGN "Merging is deterministic": fields changed on one
    /// side only are kept; CONTRACT §4.2 "nothing is lost … even if the process is killed
    /// mid-sync", which loses the answer the same way).
    /// Actual: A fetches (or sends and gets `CONFLICT`) and merges the server copy, whose
    /// `lastName` is "Lee" (A's own lost write), against the ancestor (no last name) and its local
    /// copy (no last name): local equals ancestor, so the merge takes the server's "Lee" as a
    /// remote change. Server and A end with `lastName` "Lee". The merge cannot tell A's own
    /// unacknowledged write from another machine's; remembering what was sent (or comparing
    /// modification dates when the local copy was edited after the ancestor) would.
    func testAFieldEditedBackAfterALostAnswerKeepsTheLatestEdit() async throws {
        let root = FaultScenario.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try SQLiteRecordStore(directory: root.appendingPathComponent("server").path)
        defer { server.close() }
        let api = InProcessTransport(api: RecordAPI(store: server, requestsPerSecond: 1_000_000, logger: FaultScenario.quietLogger))
        let token = try server.createUser(name: "aba").token
        let clock = EditClock()
        let noFaults = FaultRates(requestLost: 0, responseLost: 0, duplicated: 0, throttled: 0, tryAgainLater: 0, pollDelayed: 0,
                                  pollReordered: 0)
        let a = try SyncMachine(index: 0, directory: root, api: api, token: token, seed: 1, rates: noFaults, clock: clock, log: EditLog())

        let person = Person(firstName: "Ann", modificationDate: clock.now())
        try a.create([person], requiring: [])
        try await a.engine.sync()

        try a.change(Person.self, person.recordName) { $0.lastName = "Lee" }
        a.transport.rates.responseLost = 1  // the server applies A's update; A never hears back
        do {
            try await a.engine.sync()
            XCTFail("the sync cannot succeed without answers")
        } catch {}
        a.transport.rates.responseLost = 0
        let lost = try await FaultScenario.serverRecords(api, token: token)
        XCTAssertEqual(lost[person.recordName]?.fields["lastName"], .string("Lee"), "the update reached the server")

        try a.change(Person.self, person.recordName) { $0.lastName = nil }  // A's latest edit
        try await a.engine.sync()
        try await a.engine.sync()
        let onServer = try await FaultScenario.serverRecords(api, token: token)
        XCTAssertNil(onServer[person.recordName]?.fields["lastName"], "the server has A's earlier, lost write instead of its latest edit")
        XCTAssertNil(try a.store.record(named: person.recordName)?.fields["lastName"], "A shows its earlier write instead of its latest edit")
    }
}
