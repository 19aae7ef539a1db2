import Foundation
import RecordClient
import RecordModel
@testable import Scorebook
@testable import SyncEngine
import XCTest

/// Two or three machines syncing through the in-memory server: the engine end to end, without
/// sockets.
final class ZoneSynchronizerTests: XCTestCase {
    var server: MemoryCloudDatabase!
    var clock: TestClock!

    override func setUp() {
        server = MemoryCloudDatabase()
        clock = TestClock()
    }

    func machine() throws -> TestMachine { try TestMachine(server: server, clock: clock) }

    /// Catan with Ann and Bob, a finished match, Ann winning 10 + 5 to 7.
    func recordMatch(on machine: TestMachine) throws -> Match {
        let book = machine.book
        try book.addGame(name: "Catan")
        try book.addPerson(firstName: "Ann", lastName: "Lee")
        try book.addPerson(firstName: "Bob")
        let match = try book.startMatch(gameReference: "Catan", playerReferences: ["Ann", "Bob"])
        try book.addScore(matchReference: match.recordName, playerReference: "Ann", value: 10)
        try book.addScore(matchReference: match.recordName, playerReference: "Bob", value: 7)
        try book.addScore(matchReference: match.recordName, playerReference: "Ann", value: 5)
        return try book.finishMatch(reference: match.recordName)
    }

    func testAMatchRecordedOnOneMachineShowsIdenticallyOnAnother() async throws {
        let first = try machine()
        let second = try machine()
        let match = try recordMatch(on: first)
        let sent = try await first.sync()
        XCTAssertEqual(sent.sentSaved, 9)
        let received = try await second.sync()
        XCTAssertEqual(received.receivedSaved, 9)
        XCTAssertEqual(try second.snapshot(), try first.snapshot())
        let onSecond = try second.book.result(of: try second.book.resolve(Match.self, match.recordName))
        XCTAssertEqual(onSecond, try first.book.result(of: match))
        XCTAssertEqual(onSecond.rows.map(\.total), [15, 7])
        XCTAssertEqual(try second.book.entity(Person.self, named: onSecond.winner!)?.firstName, "Ann")
        XCTAssertEqual(try first.book.store.pendingChangeCount(), 0)
    }

    func testConcurrentEditsToDifferentFieldsBothSurvive() async throws {
        let first = try machine()
        let second = try machine()
        var game = try first.book.addGame(name: "Catan")
        try await first.sync()
        try await second.sync()
        clock.advance()
        game.name = "Catan Deluxe"
        game.modificationDate = clock.now
        try first.book.save([game])
        clock.advance()
        var other = try second.book.resolve(Game.self, "Catan")
        other.lowScoreWins = true
        other.modificationDate = clock.now
        try second.book.save([other])
        try await first.sync()
        let merged = try await second.sync()
        XCTAssertEqual(merged.conflicts, 0, "different fields are no conflict")
        try await first.sync()
        let onFirst = try first.book.resolve(Game.self, game.recordName)
        XCTAssertEqual(onFirst.name, "Catan Deluxe")
        XCTAssertTrue(onFirst.lowScoreWins)
        XCTAssertEqual(try first.snapshot(), try second.snapshot())
        XCTAssertEqual(try first.snapshot(), snapshot(of: server))
    }

    func testTheSameFieldEditedOnTwoMachinesConvergesToTheNewerEdit() async throws {
        for newerSyncsFirst in [true, false] {
            server = MemoryCloudDatabase()
            let first = try machine()
            let second = try machine()
            let game = try first.book.addGame(name: "Catan")
            try await first.sync()
            try await second.sync()
            clock.advance()
            var older = game
            older.name = "Older"
            older.modificationDate = clock.now
            try first.book.save([older])
            clock.advance()
            var newer = game
            newer.name = "Newer"
            newer.modificationDate = clock.now
            try second.book.save([newer])
            let (early, late) = newerSyncsFirst ? (second, first) : (first, second)
            try await early.sync()
            let summary = try await late.sync()
            XCTAssertEqual(summary.conflicts, 1)
            try await early.sync()
            for machine in [first, second] {
                XCTAssertEqual(try machine.book.resolve(Game.self, game.recordName).name, "Newer", "newer syncs first: \(newerSyncsFirst)")
            }
            XCTAssertEqual(server.allRecords[game.recordName]?.fields["name"], .string("Newer"))
        }
    }

    func testADeletionElsewhereDeletesTheLocalCascade() async throws {
        let first = try machine()
        let second = try machine()
        let match = try recordMatch(on: first)
        try await first.sync()
        try await second.sync()
        let deleted = try first.book.delete(Match.self, reference: match.recordName)
        XCTAssertEqual(deleted.count, 6, "the match, two players, three scores")
        try await first.sync()
        XCTAssertEqual(try first.book.store.pendingChangeCount(), 0)
        let summary = try await second.sync()
        XCTAssertGreaterThanOrEqual(summary.receivedDeleted, 1)
        XCTAssertEqual(try second.book.all(Match.self), [])
        XCTAssertEqual(try second.book.all(Score.self), [])
        XCTAssertEqual(Set(second.applied.filter { $0.kind == .deleted }.map(\.recordType)), ["Match", "Player", "Score"])
        XCTAssertEqual(try second.snapshot(), snapshot(of: server))
    }

    func testAnEditOfARecordDeletedElsewhereIsDropped() async throws {
        let first = try machine()
        let second = try machine()
        let game = try first.book.addGame(name: "Catan")
        try await first.sync()
        try await second.sync()
        try first.book.delete(Game.self, reference: "Catan")
        try await first.sync()
        var edited = try second.book.resolve(Game.self, "Catan")
        edited.name = "Catan 2"
        try second.book.save([edited])
        try await second.sync()
        XCTAssertNil(try second.book.entity(Game.self, named: game.recordName))
        XCTAssertNil(server.allRecords[game.recordName], "a record deleted on the server stays deleted")
        XCTAssertEqual(try second.book.store.pendingChangeCount(), 0)
    }

    func testAScoreForAMatchDeletedElsewhereGoesToo() async throws {
        let first = try machine()
        let second = try machine()
        let match = try recordMatch(on: first)
        try await first.sync()
        try await second.sync()
        try first.book.delete(Match.self, reference: match.recordName)
        try await first.sync()
        // The match was finished: reopening it is a local edit of the deleted match as well.
        try second.book.reopenMatch(reference: match.recordName)
        try second.book.addScore(matchReference: match.recordName, playerReference: "Bob", value: 3)
        try await second.sync()
        XCTAssertEqual(try second.book.all(Score.self), [])
        XCTAssertEqual(orphans(in: snapshot(of: server)), [])
        XCTAssertEqual(try second.snapshot(), snapshot(of: server))
    }

    func testThrottlingIsWaitedOutAndLargeBatchesSplit() async throws {
        let first = try machine()
        _ = try recordMatch(on: first)
        server.modifyFailures = [ServerError(.throttled, "slow down", retryAfter: 2), ServerError(.limitExceeded, "too big")]
        let summary = try await first.sync()
        XCTAssertEqual(summary.sentSaved, 9)
        XCTAssertEqual(server.allRecords.count, 9)
        XCTAssertGreaterThanOrEqual(server.modifyCalls, 4, "throttled, too big, then two halves")
    }

    func testAMissingZoneIsRecreatedAndEverythingResent() async throws {
        let first = try machine()
        _ = try recordMatch(on: first)
        try await first.sync()
        server.deleteZone(Scorebook.zoneID.zoneName)
        try await first.sync()
        XCTAssertEqual(snapshot(of: server), try first.snapshot())
    }

    func testAnExpiredTokenRefetchesAndRemovesWhatTheServerNoLongerHas() async throws {
        let first = try machine()
        let second = try machine()
        _ = try recordMatch(on: first)
        try first.book.addGame(name: "Go")
        try await first.sync()
        try await second.sync()
        try first.book.delete(Game.self, reference: "Go")
        try await first.sync()
        server.purgeTombstonesAndExpireTokens()
        try await second.sync()
        XCTAssertEqual(try second.book.all(Game.self).map(\.name), ["Catan"])
        XCTAssertEqual(try second.snapshot(), snapshot(of: server))
    }

    func testChildrenFetchedBeforeTheirParentsWaitForThem() async throws {
        server.pageSize = 1
        let first = try machine()
        let second = try machine()
        let match = try recordMatch(on: first)
        try await first.sync()
        // Editing the game moves it to the end of the change feed, after its match.
        clock.advance()
        var game = try first.book.resolve(Game.self, "Catan")
        game.name = "Catan Deluxe"
        game.modificationDate = clock.now
        try first.book.save([game])
        try await first.sync()
        try await second.sync()
        XCTAssertEqual(try second.book.store.waitingRecordCount(), 0)
        XCTAssertEqual(try second.snapshot(), try first.snapshot())
        XCTAssertEqual(try second.book.gameName(of: try second.book.resolve(Match.self, match.recordName)), "Catan Deluxe")
    }

    func testEditsMadeWhileTheServerIsDownAreSentOnceWhenItReturns() async throws {
        let first = try machine()
        first.database.isDown = true
        try first.book.addGame(name: "Catan")
        do {
            try await first.sync()
            XCTFail("sync must fail while the server is down")
        } catch {
            XCTAssertTrue(String(describing: error).contains("cannot reach"))
        }
        XCTAssertEqual(try first.book.status().pendingChanges, 1)
        XCTAssertNotNil(try first.book.status().lastError)
        first.database.isDown = false
        try await first.sync()
        try await first.sync()
        XCTAssertEqual(server.operationsReceived.count, 1, "sent exactly once")
        XCTAssertNil(try first.book.status().lastError)
    }

    func testAnAnswerLostAfterTheServerAppliedItDuplicatesNothing() async throws {
        let first = try machine()
        let second = try machine()
        _ = try recordMatch(on: first)
        first.database.loseNextModifyAnswer = true
        do {
            try await first.sync()
            XCTFail("the lost answer must surface as a failed sync")
        } catch {}
        XCTAssertGreaterThan(try first.book.store.pendingChangeCount(), 0)
        try await first.sync()
        XCTAssertEqual(try first.book.store.pendingChangeCount(), 0)
        try await second.sync()
        XCTAssertEqual(server.allRecords.count, 9)
        XCTAssertEqual(try second.snapshot(), try first.snapshot())
    }

    func testWatchAppliesRemoteChangesUntilItsDeadline() async throws {
        let first = try machine()
        let second = try machine()
        _ = try recordMatch(on: first)
        try await first.sync()
        try await second.sync()
        try first.book.delete(Game.self, reference: "Catan")
        try await first.sync()
        var lines: [String] = []
        try await second.synchronizer.watch(until: Date().addingTimeInterval(0.3), pollTimeout: 1,
                                            onChange: { lines.append(Scorebook.describe($0)) })
        XCTAssertTrue(lines.contains { $0.hasPrefix("deleted Game \"Catan\" (Game|~|") }, "\(lines)")
        XCTAssertEqual(try second.book.all(Game.self), [])
    }
}
