import Foundation
@testable import Scorebook
import SyncEngine
import XCTest

final class ReferenceResolverTests: XCTestCase {
    let candidates = [
        ReferenceResolver.Candidate(recordName: "Person|~|BEA00000-0000-0000-0000-000000000001", names: ["Ann", "Ann Lee"], displayName: "Ann Lee"),
        ReferenceResolver.Candidate(recordName: "Person|~|ABC00000-0000-0000-0000-000000000002", names: ["Ann", "Ann Smith"], displayName: "Ann Smith"),
        ReferenceResolver.Candidate(recordName: "Person|~|ABD00000-0000-0000-0000-000000000003", names: ["Bea", "Bea"], displayName: "Bea"),
    ]

    func testRecordNameNameAndPrefix() {
        XCTAssertEqual(ReferenceResolver.resolve("Person|~|ABC00000-0000-0000-0000-000000000002", among: candidates),
                       .found("Person|~|ABC00000-0000-0000-0000-000000000002"))
        XCTAssertEqual(ReferenceResolver.resolve("ann lee", among: candidates), .found("Person|~|BEA00000-0000-0000-0000-000000000001"))
        XCTAssertEqual(ReferenceResolver.resolve("abc0", among: candidates), .found("Person|~|ABC00000-0000-0000-0000-000000000002"))
        XCTAssertEqual(ReferenceResolver.resolve("Person|~|ABD", among: candidates), .found("Person|~|ABD00000-0000-0000-0000-000000000003"))
    }

    func testANameWinsOverAUUIDPrefix() {
        XCTAssertEqual(ReferenceResolver.resolve("Bea", among: candidates), .found("Person|~|ABD00000-0000-0000-0000-000000000003"))
    }

    func testAmbiguousAndUnknown() {
        guard case .ambiguous(let matches) = ReferenceResolver.resolve("Ann", among: candidates) else { return XCTFail("ambiguous") }
        XCTAssertEqual(matches.count, 2)
        let twins = candidates + [ReferenceResolver.Candidate(recordName: "Person|~|ABC0FFFF-0000-0000-0000-000000000004", names: ["Cy"],
                                                              displayName: "Cy")]
        guard case .ambiguous = ReferenceResolver.resolve("abc0", among: twins) else { return XCTFail("ambiguous prefix") }
        XCTAssertEqual(ReferenceResolver.resolve("ABC", among: candidates), .notFound, "three characters are too few to be an id")
        XCTAssertEqual(ReferenceResolver.resolve("Zed", among: candidates), .notFound)
        XCTAssertEqual(ReferenceResolver.resolve("", among: candidates), .notFound)
    }
}

final class ResultsAndStandingsTests: XCTestCase {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func players(_ match: Match, _ people: [String]) -> [Player] {
        people.enumerated().map { Player(recordName: "Player|~|\(match.recordName)-\($0.element)", match: match.recordName,
                                         person: "Person|~|\($0.element)", seat: Int64($0.offset + 1)) }
    }

    func scores(_ players: [Player], _ values: [Double]) -> [Score] {
        zip(players, values).map { Score(player: $0.recordName, value: $1) }
    }

    func testRanksTotalsAndTheWinner() {
        let match = Match(recordName: "Match|~|1", game: "Game|~|G", startDate: start, endDate: start)
        let seated = players(match, ["A", "B", "C"])
        let result = MatchResult.compute(match: match, lowScoreWins: false, players: seated,
                                         personNames: ["Person|~|A": "Ann", "Person|~|B": "Bob", "Person|~|C": "Cy"],
                                         scores: scores(seated, [5, 9, 5]) + [Score(player: seated[0].recordName, value: 1)])
        XCTAssertEqual(result.rows.map(\.name), ["Bob", "Ann", "Cy"])
        XCTAssertEqual(result.rows.map(\.rank), [1, 2, 3])
        XCTAssertEqual(result.rows.map(\.total), [9, 6, 5])
        XCTAssertEqual(result.winner, "Person|~|B")
    }

    func testLowScoreWinsTiesAndUnfinishedMatchesHaveNoWinner() {
        let finished = Match(recordName: "Match|~|1", game: "Game|~|G", startDate: start, endDate: start)
        let seated = players(finished, ["A", "B", "C"])
        let golf = MatchResult.compute(match: finished, lowScoreWins: true, players: seated, personNames: [:],
                                       scores: scores(seated, [70, 72, 70]))
        XCTAssertEqual(golf.rows.map(\.rank), [1, 1, 3])
        XCTAssertNil(golf.winner, "a shared best total has no winner")
        let running = Match(recordName: "Match|~|2", game: "Game|~|G", startDate: start)
        let unfinished = MatchResult.compute(match: running, lowScoreWins: true, players: players(running, ["A"]),
                                             personNames: [:], scores: [])
        XCTAssertNil(unfinished.winner)
    }

    func testStandingsCountPlayedWonWinRateAndAverage() {
        let people = [Person(recordName: "Person|~|A", firstName: "Ann"), Person(recordName: "Person|~|B", firstName: "Bob"),
                      Person(recordName: "Person|~|C", firstName: "Cy")]
        let names = ["Person|~|A": "Ann", "Person|~|B": "Bob"]
        let first = Match(recordName: "Match|~|1", game: "Game|~|G", startDate: start, endDate: start)
        let second = Match(recordName: "Match|~|2", game: "Game|~|G", startDate: start, endDate: start)
        let third = Match(recordName: "Match|~|3", game: "Game|~|G", startDate: start)
        let inputs = [(first, [10.0, 4.0]), (second, [3.0, 8.0]), (third, [1.0, 0.0])].map { match, values -> Standings.MatchInput in
            let seated = players(match, ["A", "B"])
            return Standings.MatchInput(match: match, result: MatchResult.compute(match: match, lowScoreWins: false, players: seated,
                                                                                  personNames: names, scores: scores(seated, values)))
        }
        let rows = Standings.compute(people: people, matches: inputs)
        XCTAssertEqual(rows.map(\.name), ["Ann", "Bob", "Cy"])
        XCTAssertEqual(rows[0].played, 2, "the match in progress does not count")
        XCTAssertEqual(rows[0].won, 1)
        XCTAssertEqual(rows[0].winRate, 0.5, accuracy: 1e-9)
        XCTAssertEqual(rows[0].averageScore ?? 0, 13.0 / 2.0, accuracy: 1e-9, "totals of finished matches only")
        XCTAssertEqual(rows[2].played, 0)
        XCTAssertNil(rows[2].averageScore)
    }
}

final class ScorebookCommandsTests: XCTestCase {
    func makeBook() throws -> Scorebook {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("book-\(UUID().uuidString)/s.sqlite").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        return try Scorebook(storePath: path)
    }

    func testDeletingAPersonDeletesTheirPlayersAndScoresOnly() throws {
        let book = try makeBook()
        try book.addGame(name: "Catan")
        try book.addPerson(firstName: "Ann")
        try book.addPerson(firstName: "Bob")
        let match = try book.startMatch(gameReference: "Catan", playerReferences: ["Ann", "Bob"])
        try book.addScore(matchReference: match.recordName, playerReference: "Ann", value: 3)
        try book.addScore(matchReference: match.recordName, playerReference: "Bob", value: 4)
        let deleted = try book.delete(Person.self, reference: "Ann")
        XCTAssertEqual(deleted.map(\.recordType), ["Person", "Player", "Score"])
        XCTAssertEqual(try book.all(Match.self).count, 1)
        XCTAssertEqual(try book.result(of: match).rows.map(\.name), ["Bob"])
    }

    func testBadReferencesAreExitCodeTwo() throws {
        let book = try makeBook()
        try book.addPerson(firstName: "Ann", lastName: "Lee")
        try book.addPerson(firstName: "Ann", lastName: "Smith")
        try book.addGame(name: "Catan")
        XCTAssertThrowsError(try book.startMatch(gameReference: "Catan", playerReferences: ["Ann"])) {
            XCTAssertEqual(($0 as? ScorebookError)?.exitCode, 2)
        }
        XCTAssertThrowsError(try book.startMatch(gameReference: "Chess", playerReferences: ["Ann Lee"])) {
            XCTAssertEqual(($0 as? ScorebookError)?.exitCode, 2)
        }
        let match = try book.startMatch(gameReference: "catan", playerReferences: ["Ann Lee", "ann smith"])
        XCTAssertThrowsError(try book.addScore(matchReference: match.recordName, playerReference: "Ann", value: 1)) {
            XCTAssertEqual(($0 as? ScorebookError)?.kind, .badReference)
        }
        let score = try book.addScore(matchReference: match.recordName, playerReference: "Ann Smith", value: 1)
        XCTAssertEqual(score.round, 1)
        XCTAssertEqual(try book.addScore(matchReference: match.recordName, playerReference: "Ann Smith", value: 2).round, 2)
    }

    func testLoginAsAnotherUserIsRefusedUntilTheLocalDataIsDeleted() async throws {
        let alice = MemoryCloudDatabase(userRecordName: "_alice")
        let bob = MemoryCloudDatabase(userRecordName: "_bob")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("acct-\(UUID().uuidString)/s.sqlite").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let store = try LocalRecordStore(path: path)
        let accounts = AccountManager(store: store, makeDatabase: { $0.token == "alice-token" ? alice : bob })
        let book = Scorebook(store: store, accounts: accounts)
        try book.addGame(name: "Made before login")
        try await book.login(server: "http://127.0.0.1:1", token: "alice-token")
        try await book.sync()
        XCTAssertEqual(alice.allRecords.count, 1, "records made before any login belong to the first account")
        try book.logout(deleteLocalData: false)
        do {
            try await book.login(server: "http://127.0.0.1:1", token: "bob-token")
            XCTFail("another user's data must not be adopted")
        } catch let error as ScorebookError {
            XCTAssertTrue(error.description.contains("--delete-local"))
        }
        XCTAssertEqual(try book.status().dataOwner, "_alice")
        try book.logout(deleteLocalData: true)
        try await book.login(server: "http://127.0.0.1:1", token: "bob-token")
        try await book.sync()
        XCTAssertEqual(bob.allRecords.count, 0, "bob never receives alice's records")
        XCTAssertEqual(try book.all(Game.self), [])
    }
}
