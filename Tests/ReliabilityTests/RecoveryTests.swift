import Foundation
import RecordModel
import RecordStore
import SQLiteRecordStore
@testable import Scorebook
@testable import SyncEngine
import TestSupport
import XCTest

/// The sync engine's large and exceptional paths against the real store and `RecordAPI` (issue 4):
/// an outbox bigger than one request, a zone deleted on the server, a sync token that expired.
final class RecoveryTests: XCTestCase {
    /// A scorebook of 1 game, 1 person, 200 matches, 200 players and 400 scores made offline.
    func makeScorebook(on machine: SyncMachine, clock: EditClock) throws -> Int {
        let game = Game(name: "Go", modificationDate: clock.now())
        let person = Person(firstName: "Ann", modificationDate: clock.now())
        var entities: [any CloudKitCompatible] = [game, person]
        for index in 0..<200 {
            let match = Match(game: game.recordName, startDate: clock.now())
            let player = Player(match: match.recordName, person: person.recordName, seat: 1, modificationDate: clock.now())
            // Children first in the outbox's order of edits: the engine must still send parents first.
            entities += [Score(player: player.recordName, value: Double(index), round: 1, modificationDate: clock.now()),
                         Score(player: player.recordName, value: 1, round: 2, modificationDate: clock.now()), player, match]
        }
        try machine.create(entities, requiring: [])
        return entities.count
    }

    /// A testbed whose first machine made `makeScorebook` and synced, and whose second machine
    /// then synced it all; the caller closes the testbed.
    func scorebookOnTwoMachines(user: String, file: StaticString = #filePath, line: UInt = #line) async throws
        -> (SyncTestbed, SyncMachine, SyncMachine, Int)
    {
        let testbed = try await SyncTestbed(user: user)
        let a = try testbed.machine(0), b = try testbed.machine(1)
        let count = try makeScorebook(on: a, clock: testbed.clock)
        try await a.engine.sync()
        try await b.engine.sync()
        XCTAssertEqual(try b.records().count, count, "B has the whole scorebook", file: file, line: line)
        return (testbed, a, b, count)
    }

    func assertEqualToServer(_ machine: SyncMachine, _ server: [String: Record], _ label: String,
                             file: StaticString = #filePath, line: UInt = #line) throws
    {
        let local = try machine.records()
        XCTAssertEqual(Set(local.keys), Set(server.keys), "\(label): the same records", file: file, line: line)
        let differing = local.filter { name, record in server[name].map { $0.fields != record.fields } ?? false }.keys
        XCTAssertEqual(differing.count, 0, "\(label): fields differ for \(differing.prefix(3))", file: file, line: line)
        XCTAssertEqual(try machine.store.pendingChangeCount(), 0, "\(label): nothing left to send", file: file, line: line)
        XCTAssertEqual(try machine.store.waitingRecordCount(), 0, "\(label): no child waits for a parent", file: file, line: line)
    }

    /// 802 records made offline go in requests of at most 400 operations, each of which the server
    /// accepts whole (a child sent before its parent would be VALIDATING_REFERENCE_ERROR); another
    /// machine fetches them all across several pages.
    func testALargeOutboxGoesInBatchesOfAtMost400AndArrivesWhole() async throws {
        let testbed = try await SyncTestbed(user: "large")
        defer { testbed.close() }
        let a = try testbed.machine(0), b = try testbed.machine(1)
        let batchSizes = LockedBox<[Int]>([])
        a.transport.trace = { line in
            guard line.hasPrefix("records/modify") else { return }
            let operations = line.split(separator: "\n").count - 1
            batchSizes.set(batchSizes.value + [operations])
        }
        let count = try makeScorebook(on: a, clock: testbed.clock)
        try await a.engine.sync()
        let sizes = batchSizes.value.filter { $0 > 0 }
        XCTAssertEqual(sizes.reduce(0, +), count, "each record sent once: \(sizes)")
        XCTAssertTrue(sizes.allSatisfy { $0 <= 400 }, "batches \(sizes)")
        XCTAssertGreaterThanOrEqual(sizes.count, 3)

        let server = try await testbed.serverRecords()
        XCTAssertEqual(server.count, count)
        try await b.engine.sync()
        try assertEqualToServer(a, server, "A")
        try assertEqualToServer(b, server, "B")
    }

    /// A deleted game reaches the other machine as tombstones for it and its cascade, in the
    /// feed's order; the summary counts every record removed locally, so the figure does not
    /// depend on whether the game's tombstone came before its matches' or after.
    func testARemoteCascadeCountsEveryRecordItRemoved() async throws {
        let (testbed, a, b, count) = try await scorebookOnTwoMachines(user: "cascade-count")
        defer { testbed.close() }
        let game = try XCTUnwrap(try a.entities(Game.self).first)
        let removed = try a.delete(game.recordName)
        XCTAssertEqual(removed.count, count - 1, "everything but the person goes with the game")
        let sent = try await a.engine.sync()
        XCTAssertEqual(sent.sentDeleted, 1, "one delete is sent; the server cascades")
        let received = try await b.engine.sync()
        XCTAssertEqual(received.receivedDeleted, count - 1)
        XCTAssertEqual(try b.records().count, 1)
    }

    /// The zone is deleted on the server (another client, or an operator). The next sync of the
    /// machine that has the data recreates the zone and sends everything again, a new edit
    /// included; the other machine's token is then of a zone that no longer exists
    /// (CHANGE_TOKEN_EXPIRED), so it refetches from scratch and ends equal to the server.
    func testADeletedZoneIsRecreatedAndAnExpiredTokenRefetched() async throws {
        let (testbed, a, b, count) = try await scorebookOnTwoMachines(user: "zone-reset")
        defer { testbed.close() }

        let authenticated = try await testbed.storage.authenticate(bearerToken: testbed.token)
        let user = try XCTUnwrap(authenticated)
        let scope = DatabaseScope(user: user, container: "iCloud.scorebook", environment: .production)
        try await testbed.storage.deleteZone(scope, zoneName: Scorebook.zoneID.zoneName)
        do {
            _ = try await SQLiteStorage(testbed.server).lookupZone(scope, zoneName: Scorebook.zoneID.zoneName)
            XCTFail("the zone is gone")
        } catch {
            XCTAssertEqual((error as? ServerError)?.code, .zoneNotFound)
        }

        let late = Person(firstName: "Late", modificationDate: testbed.clock.now())
        try a.create([late], requiring: [])
        try await a.engine.sync()
        let server = try await testbed.serverRecords()
        XCTAssertEqual(server.count, count + 1, "the zone is back with everything A had, and A's new edit")
        XCTAssertNotNil(server[late.recordName])

        // B's token now names a zone that was deleted: the server says it expired.
        let staleToken = try XCTUnwrap(try b.store.setting(SyncSettingKey.syncToken))
        do {
            _ = try await testbed.storage.zoneChanges(scope, zone: Scorebook.zoneID, syncToken: staleToken, resultsLimit: 400, recordTypes: nil)
            XCTFail("a token of the deleted zone is answered")
        } catch {
            XCTAssertEqual((error as? ServerError)?.code, .changeTokenExpired)
        }
        try await b.engine.sync()
        try assertEqualToServer(a, server, "A")
        try assertEqualToServer(b, server, "B after refetching from scratch")
        XCTAssertNotEqual(try b.store.setting(SyncSettingKey.syncToken), staleToken)
    }
}
