import Foundation
import RecordModel
@testable import Scorebook
@testable import ScorebookKit
@testable import SyncEngine
import XCTest

/// Issue 15 in process: who entered a score, the rounds grid, and the export formats' readers.
final class ScorekeepingTests: XCTestCase {
    func makeBook() throws -> Scorebook {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("keeping-\(UUID().uuidString)/s.sqlite").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        return try Scorebook(storePath: path)
    }

    /// A match of Catan with Ann and Bob, and Ann's first score.
    func scoredMatch(in book: Scorebook) throws -> (Match, Score) {
        try book.addGame(name: "Catan")
        try book.addPerson(firstName: "Ann")
        try book.addPerson(firstName: "Bob")
        let match = try book.startMatch(gameReference: "Catan", playerReferences: ["Ann", "Bob"])
        return (match, try book.addScore(matchReference: match.recordName, playerReference: "Ann", value: 4))
    }

    func testEnteredByIsTheServersLastModifierUntilTheScoreIsEditedHere() throws {
        let book = try makeBook()
        let (match, score) = try scoredMatch(in: book)
        XCTAssertNil(try book.scoreLines(of: match).first?.enteredBy, "no account has ever logged in")
        try book.store.setSetting(SyncSettingKey.dataOwner, "_alice")
        XCTAssertEqual(try book.scoreLines(of: match).first?.enteredBy, "_alice", "entered here")

        // The server's copy of the same score, last written by bob (a participant of a shared book).
        var copy = try XCTUnwrap(try book.store.record(named: score.recordName))
        copy.recordChangeTag = "1"
        copy.modified = ChangeStamp(timestamp: 1, userRecordName: "_bob")
        try book.store.transaction { try LocalRecordStore.writeServerCopy(copy, in: $0) }
        XCTAssertEqual(try book.scoreLines(of: match).first?.enteredBy, "_bob")

        try book.editScore(reference: score.recordName, value: 5)
        XCTAssertEqual(try book.scoreLines(of: match).first?.enteredBy, "_alice", "the value now shown was entered here")
    }

    /// Two scores of a player in one round are summed and marked (issue 45), never silently.
    func testRoundsSumTwoScoresOfARoundMarkThemAndPutScoresWithoutARoundLast() {
        let columns = [MatchRounds.Column(player: "P1", person: "A", name: "Ann"), MatchRounds.Column(player: "P2", person: "B", name: "Bob")]
        let scores = [Score(player: "P1", value: 1, round: 2), Score(player: "P2", value: 3, round: nil),
                      Score(player: "P1", value: 2, round: 2), Score(player: "P2", value: 5, round: 1)]
        let rounds = MatchRounds.compute(columns: columns, scores: scores)
        XCTAssertEqual(rounds.rows.map(\.round), [1, 2, nil])
        XCTAssertEqual(rounds.rows.map { $0.values["P1"] }, [nil, 3, nil])
        XCTAssertEqual(rounds.rows.map(\.enteredTwice), [[], ["P1"], []])
        let result = MatchResult(rows: [
            .init(player: "P1", person: "A", name: "Ann", seat: 1, total: 3, rank: 2),
            .init(player: "P2", person: "B", name: "Bob", seat: 2, total: 8, rank: 1),
        ], winner: nil)
        XCTAssertEqual(rounds.table(totals: result).rendered.split(separator: "\n"), [
            "ROUND  Ann     Bob", "1              5", "2      3 (×2)", "-              3", "TOTAL  3       8",
        ])
    }

    func testCSVReaderHandlesQuotesLineBreaksAndCRLF() throws {
        let records = try BookExport.parseCSV("a,\"b,\"\"c\"\"\",\"d\r\ne\"\r\n,,\n\"\"\nlast")
        XCTAssertEqual(records.map(\.cells), [["a", "b,\"c\"", "d\r\ne"], ["", "", ""], [""], ["last"]])
        XCTAssertEqual(records.map(\.line), [1, 3, 4, 5])
        XCTAssertThrowsError(try BookExport.parseCSV("a,\"b\"c\n"))
        XCTAssertThrowsError(try BookExport.parseCSV("a,b\"c\n"))
        XCTAssertThrowsError(try BookExport.parseCSV("a,\"open\n"))
    }

    func testBothFormatsReadBackWhatTheyWroteBitForBit() throws {
        let book = try makeBook()
        let (match, _) = try scoredMatch(in: book)
        for value in [0.1 + 0.2, 1e-300, 123456789012345680, .pi, -7.25] {
            try book.addScore(matchReference: match.recordName, playerReference: "Bob", value: value)
        }
        try book.startMatch(gameReference: "Catan", playerReferences: ["Bob"], notes: "a, \"b\"\nc",
                            location: MatchPlace(name: "Pub", latitude: -90, longitude: 180))
        let exported = try book.export()
        XCTAssertEqual(exported.rows.count, 15)
        XCTAssertEqual(try BookExport(fileContents: Data(exported.jsonText.utf8)), exported)
        XCTAssertEqual(try BookExport(fileContents: Data(exported.csvText.utf8)), exported)
        XCTAssertEqual(try book.importBook(exported), ImportSummary(created: 0, updated: 0, unchanged: 15, keptNewer: 0))
    }
}

final class MatchDateArgumentTests: XCTestCase {
    func testZonedDatesAreExactAndUnzonedOnesAreLocal() throws {
        XCTAssertEqual(try Match.date(fromArgument: "2026-11-20T19:30:00Z"), Date(timeIntervalSince1970: 1_795_203_000))
        XCTAssertEqual(try Match.date(fromArgument: "2026-11-20T19:30:00.250+01:00"), Date(timeIntervalSince1970: 1_795_199_400.25))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        let local = calendar.date(from: DateComponents(year: 2026, month: 11, day: 20, hour: 19, minute: 30))
        XCTAssertEqual(try Match.date(fromArgument: "2026-11-20T19:30"), local)
        XCTAssertEqual(try Match.date(fromArgument: "2026-11-20"), calendar.date(from: DateComponents(year: 2026, month: 11, day: 20)))
        for bad in ["", "tomorrow", "2026-11-31", "20.11.2026", "2026-11-20T25:00:00Z"] {
            XCTAssertThrowsError(try Match.date(fromArgument: bad), bad) {
                XCTAssertEqual(($0 as? ScorebookError)?.kind, .invalidInput)
            }
        }
    }
}
