import Foundation
import RecordClient
import RecordModel
import RecordServer
import RecordStore
@testable import Scorebook
import SyncEngine
import XCTest

/// Lost requests and answers, one at a time, in exchanges the fault-injection runs
/// (FaultInjectionTests) found wrong once: each test was a known bug, now fixed.
final class LostAnswerTests: XCTestCase {
    /// A record whose creation reached the server but whose answer was lost (a dropped
    /// connection, or the CLI killed mid-sync) stays deleted after another machine deletes it.
    /// Found by the fault-injection runs, fixed in 033ee0e (fetch before sending after a lost
    /// answer).
    ///
    /// Exchange: machine A saves a new Person and syncs; the server applies A's
    /// `records/modify` `create` but the answer never reaches A (A's outbox keeps the entry,
    /// with no server copy). Machine B syncs (gets the Person), deletes it and syncs (the server
    /// deletes it; its change feed now holds a tombstone). A syncs again.
    /// Expected: the Person stays deleted everywhere: a record deleted on the server stays
    /// deleted unless the user recreates it, and nothing is lost or duplicated, even if the
    /// process is killed mid-sync.
    /// The bug was: A resent `create` (it had no server copy), the server accepted it because the
    /// name was free again, and the Person was live on the server again.
    func testACreateWhoseAnswerWasLostDoesNotResurrectTheRecordAfterAnotherMachineDeletesIt() async throws {
        let testbed = try await SyncTestbed(user: "resurrection")
        defer { testbed.close() }
        let (a, b, person) = try await testbed.pairWithUnsentPerson()
        // every answer to A is lost during this sync
        await a.syncFailing(under: \.responseLost, "the sync cannot succeed without answers")
        let afterCreate = try await testbed.serverRecords()
        XCTAssertNotNil(afterCreate[person.recordName], "the create reached the server")

        try await b.engine.sync()
        XCTAssertNotNil(try b.store.record(named: person.recordName), "B received the Person")
        try b.delete(person.recordName)
        try await b.engine.sync()
        let afterDelete = try await testbed.serverRecords()
        XCTAssertNil(afterDelete[person.recordName], "B's deletion reached the server")

        try await a.engine.sync()
        try await b.engine.sync()
        let onServer = try await testbed.serverRecords()
        XCTAssertNil(onServer[person.recordName], "the Person B deleted is live on the server again")
        XCTAssertNil(try a.store.record(named: person.recordName), "A still shows the Person B deleted")
        XCTAssertNil(try b.store.record(named: person.recordName), "B got the Person it deleted back")
    }

    /// A field edited back to its earlier value after a send whose answer was lost keeps the
    /// latest edit. Found by the fault-injection runs (1 seed in 500), fixed in 5240a5b (the
    /// state a send leaves on the server becomes the merge ancestor).
    ///
    /// Exchange: machine A has a Person without a last name, in sync with the server. A sets
    /// `lastName` to "Lee" and syncs; the server applies the `records/modify` `update` but the
    /// answer never reaches A (A's server copy, the merge ancestor, still has no last name). A
    /// then clears `lastName` again (its latest edit) and syncs with no more faults.
    /// Expected: the Person has no last name on the server and on A — only A ever edited the
    /// field, and its latest edit wins (the merge is deterministic: fields changed on one
    /// side only are kept; "nothing is lost … even if the process is killed
    /// mid-sync", which loses the answer the same way).
    /// The bug was: A merged the server copy, whose `lastName` is "Lee" (A's own lost write),
    /// against the ancestor (no last name) and its local copy (no last name); local equalled
    /// ancestor, so the merge took the server's "Lee" as a remote change.
    func testAFieldEditedBackAfterALostAnswerKeepsTheLatestEdit() async throws {
        let testbed = try await SyncTestbed(user: "aba")
        defer { testbed.close() }
        let a = try testbed.machine(0)

        let person = try await testbed.sharedPerson(on: [a])

        try a.change(Person.self, person.recordName) { $0.lastName = "Lee" }
        // the server applies A's update; A never hears back
        await a.syncFailing(under: \.responseLost, "the sync cannot succeed without answers")
        let lost = try await testbed.serverRecords()
        XCTAssertEqual(lost[person.recordName]?.fields["lastName"], .string("Lee"), "the update reached the server")

        try a.change(Person.self, person.recordName) { $0.lastName = nil }  // A's latest edit
        try await a.engine.sync()
        try await a.engine.sync()
        let onServer = try await testbed.serverRecords()
        XCTAssertNil(onServer[person.recordName]?.fields["lastName"], "the server has A's earlier, lost write instead of its latest edit")
        XCTAssertNil(try a.store.record(named: person.recordName)?.fields["lastName"], "A shows its earlier write instead of its latest edit")
    }

    /// An edit whose request never reached the server survives when another machine's change to
    /// the same record arrives before it is sent again. Found by the fault-injection runs (18
    /// seeds in 1000 after 5240a5b), fixed in 6b989fc (the merge ancestor chosen field by field
    /// after a lost answer).
    ///
    /// Exchange: machines A and B hold a Person without a last name, in sync. A sets `lastName`
    /// to "Lee" and syncs, but its `records/modify` never reaches the server (a transport error
    /// before sending: connection refused, DNS, the request lost). B sets `emailAddress` and
    /// syncs. A syncs again with no more faults.
    /// Expected: the Person has `lastName` "Lee" (A's edit, the only edit of that field) and B's
    /// email, on the server and on both machines (the merge is deterministic: fields
    /// changed on one side only are kept; "nothing is lost").
    /// The bug was (5240a5b to 6b989fc): A took the state its lost request would have left on the
    /// server ("Lee") as the merge ancestor, so B's server copy (no last name) read as a removal
    /// by B and won; A's edit was lost everywhere without a conflict reported.
    func testAnEditWhoseRequestNeverReachedTheServerSurvivesAnotherMachinesChange() async throws {
        let testbed = try await SyncTestbed(user: "lostrequest")
        defer { testbed.close() }
        let a = try testbed.machine(0)
        let b = try testbed.machine(1)

        let person = try await testbed.sharedPerson(on: [a, b])

        try a.change(Person.self, person.recordName) { $0.lastName = "Lee" }
        // nothing A sends reaches the server
        await a.syncFailing(under: \.requestLost, "the sync cannot succeed while every request is lost")
        let untouched = try await testbed.serverRecords()
        XCTAssertNil(untouched[person.recordName]?.fields["lastName"], "A's update never reached the server")

        try b.change(Person.self, person.recordName) { $0.emailAddress = "ann@example.com" }
        try await b.engine.sync()

        try await a.engine.sync()
        try await b.engine.sync()
        let onServer = try await testbed.serverRecords()
        XCTAssertEqual(onServer[person.recordName]?.fields["emailAddress"], .string("ann@example.com"), "B's edit")
        XCTAssertEqual(onServer[person.recordName]?.fields["lastName"], .string("Lee"), "A's edit on the server")
        XCTAssertEqual(try a.store.record(named: person.recordName)?.fields["lastName"], .string("Lee"), "A's edit on A")
        XCTAssertEqual(try b.store.record(named: person.recordName)?.fields["lastName"], .string("Lee"), "A's edit on B")
    }

    /// The same when the request reached the server and was refused: an edit sent with a stale
    /// change tag (`CONFLICT`) whose answer was lost survives. Fixed in 6b989fc.
    ///
    /// Exchange: machines A and B hold a Person, in sync. B sets `lastName` and syncs. A, not yet
    /// aware, sets `emailAddress` and syncs: the server refuses A's `update` (stale tag,
    /// `CONFLICT`) and that answer never reaches A. A syncs again with no more faults.
    /// Expected: the Person has B's last name and A's email everywhere (each field edited on one
    /// side only).
    /// The bug was: A took the state its refused update would have left (email set) as the merge
    /// ancestor, so the server copy's missing email read as a removal and A's edit was lost.
    func testAnEditRefusedWithALostAnswerSurvivesTheMerge() async throws {
        let testbed = try await SyncTestbed(user: "refused")
        defer { testbed.close() }
        let a = try testbed.machine(0)
        let b = try testbed.machine(1)

        let person = try await testbed.sharedPerson(on: [a, b])

        try b.change(Person.self, person.recordName) { $0.lastName = "Lee" }
        try await b.engine.sync()

        try a.change(Person.self, person.recordName) { $0.emailAddress = "ann@example.com" }
        // A's stale update is refused; A never hears why
        await a.syncFailing(under: \.responseLost, "the sync cannot succeed without answers")
        let refused = try await testbed.serverRecords()
        XCTAssertNil(refused[person.recordName]?.fields["emailAddress"], "the server refused A's stale update")

        try await a.engine.sync()
        try await b.engine.sync()
        let onServer = try await testbed.serverRecords()
        XCTAssertEqual(onServer[person.recordName]?.fields["lastName"], .string("Lee"), "B's edit")
        XCTAssertEqual(onServer[person.recordName]?.fields["emailAddress"], .string("ann@example.com"), "A's edit on the server")
        XCTAssertEqual(try a.store.record(named: person.recordName)?.fields["emailAddress"], .string("ann@example.com"), "A's edit on A")
    }

    /// A create delivered twice keeps a later local edit when the server's copy is merged in.
    /// Found by the fault-injection runs (about 1 seed in 150 on a loaded machine).
    ///
    /// Exchange: machine A creates a Person and syncs; its `records/modify` is delivered twice,
    /// the first applies and the second is answered `EXISTS`, which is the answer A gets; the
    /// lookup that follows is lost, so the sync fails. A then sets `emailAddress`. B syncs (gets
    /// the Person), sets `lastName`, a later edit, and syncs. A syncs with no more faults.
    /// Expected: the Person has A's email and B's last name everywhere (each field edited on one
    /// side only).
    /// The bug was: the `EXISTS` answer made A forget the state its create left on the server,
    /// so A merged the server's copy with no ancestor; every difference was a conflict, B's
    /// newer record won them, and A's email was lost without a trace.
    func testACreateDeliveredTwiceKeepsALaterEditThroughTheMerge() async throws {
        let testbed = try await SyncTestbed(user: "twice")
        defer { testbed.close() }
        let (a, b, person) = try await testbed.pairWithUnsentPerson()
        a.transport.script([.init(pathSuffix: "records/modify", fault: .duplicated),
                            .init(pathSuffix: "records/lookup", fault: .requestLost)])
        do {
            try await a.engine.sync()
            XCTFail("the sync cannot succeed without the lookup")
        } catch {}
        let afterCreate = try await testbed.serverRecords()
        XCTAssertNotNil(afterCreate[person.recordName], "the first delivery created the Person")

        try a.change(Person.self, person.recordName) { $0.emailAddress = "ann@example.com" }
        try await b.engine.sync()
        try b.change(Person.self, person.recordName) { $0.lastName = "Lee" }
        try await b.engine.sync()

        try await a.engine.sync()
        try await b.engine.sync()
        let onServer = try await testbed.serverRecords()
        XCTAssertEqual(onServer[person.recordName]?.fields["emailAddress"], .string("ann@example.com"), "A's edit on the server")
        XCTAssertEqual(onServer[person.recordName]?.fields["lastName"], .string("Lee"), "B's edit on the server")
        XCTAssertEqual(try a.store.record(named: person.recordName)?.fields["emailAddress"], .string("ann@example.com"), "A's edit on A")
        XCTAssertEqual(try b.store.record(named: person.recordName)?.fields["emailAddress"], .string("ann@example.com"), "A's edit on B")
    }

    /// A create whose answer was lost stays pending, and the next sync, finding it on the
    /// server, counts it as sent: what `status` says is pending is what that sync sends (issue 45:
    /// status said 19,878 after a Ctrl-C and the next sync sent 19,600).
    func testAChangeWhoseAnswerWasLostCountsAsSentAtTheNextSync() async throws {
        let testbed = try await SyncTestbed(user: "counts")
        defer { testbed.close() }
        let (a, _, person) = try await testbed.pairWithUnsentPerson()
        await a.syncFailing(under: \.responseLost, "the sync cannot succeed without answers")
        let delivered = try await testbed.serverRecords()
        XCTAssertNotNil(delivered[person.recordName], "the create reached the server")
        let pending = try a.store.pendingChangeCount()
        XCTAssertEqual(pending, 1, "unanswered, the create is still pending")

        let summary = try await a.engine.sync()
        XCTAssertEqual(summary.sentSaved + summary.sentDeleted, pending)
        XCTAssertEqual(summary.receivedSaved, 0, "A's own create is not something received")
        XCTAssertEqual(try a.store.pendingChangeCount(), 0)
    }
}
