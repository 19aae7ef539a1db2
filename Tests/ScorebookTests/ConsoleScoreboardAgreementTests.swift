import Foundation
import RecordModel
@testable import Scorebook
@testable import ScorebookKit
import XCTest

/// The cases of Fixtures/scoreboard-cases.json through the CLI's own code (the book's results and
/// standings, NumberText, the standings table). The console's scoreboard.js is tested against the
/// same file with node (Tests/ConsoleScripts), so the page and `scorebook` agree on every figure.
final class ConsoleScoreboardAgreementTests: XCTestCase {
    static let cases: JSONValue = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/scoreboard-cases.json")
        return (try? JSONValue.parse([UInt8](Data(contentsOf: url)))) ?? .null
    }()

    static let standingsHeaders = ["PERSON", "PLAYED", "WON", "WIN RATE", "AVERAGE SCORE"]

    /// A book holding the fixture's records, as sync would have stored them.
    func makeBook() throws -> Scorebook {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("scoreboard-\(UUID().uuidString)")
        addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
        let book = try Scorebook(storePath: folder.appendingPathComponent("s.sqlite").path)
        let records = try XCTUnwrap(Self.cases["book"]?["records"]?.arrayValue)
        let kinds: [String: (Record) throws -> any CloudKitCompatible] = [
            "Person": Person.init(record:), "Game": Game.init(record:), "Match": Match.init(record:),
            "Player": Player.init(record:), "Score": Score.init(record:),
        ]
        try book.save(records.map { json in
            let record = try Record(responseJSON: json)
            return try XCTUnwrap(kinds[record.recordType], record.recordType)(record)
        })
        return book
    }

    func testNumbersReadAsThePageWritesThem() throws {
        let numbers = try XCTUnwrap(Self.cases["numbers"]?.arrayValue)
        XCTAssertFalse(numbers.isEmpty)
        for number in numbers {
            let value = try XCTUnwrap(number["value"]?.doubleValue)
            XCTAssertEqual(NumberText.format(value), number["text"]?.stringValue, "\(value)")
        }
    }

    func testWinRatesAndAveragesReadAsThePageWritesThem() throws {
        let formats = try XCTUnwrap(Self.cases["standingsFormats"]?.arrayValue)
        XCTAssertFalse(formats.isEmpty)
        let rows = try formats.map { format in
            StandingsRow(person: "p", name: "P", played: 1, won: 1, winRate: try XCTUnwrap(format["winRate"]?.doubleValue),
                         averageScore: format["averageScore"]?.doubleValue)
        }
        let expected = formats.map { ["P", "1", "1", $0["winRateText"]?.stringValue ?? "?", $0["averageText"]?.stringValue ?? "?"] }
        XCTAssertEqual(Output.standings(rows, json: false), TextTable(headers: Self.standingsHeaders, rows: expected).rendered)
    }

    func testEachMatchsResultIsTheOneThePageShows() throws {
        let book = try makeBook()
        let expected = try XCTUnwrap(Self.cases["book"]?["matches"]?.objectValue)
        let matches = try book.matches()
        XCTAssertEqual(Set(matches.map(\.recordName)), Set(expected.keys))
        for match in matches {
            let want = try XCTUnwrap(expected[match.recordName])
            let result = try book.result(of: match)
            let rows = result.rows.map { row -> JSONValue in
                ["rank": .int(Int64(row.rank)), "player": .string(row.player), "person": .string(row.person),
                 "name": .string(row.name), "total": .string(NumberText.format(row.total))]
            }
            XCTAssertEqual(JSONValue.array(rows), want["rows"], match.recordName)
            XCTAssertEqual(result.winner, want["winner"]?.stringValue, match.recordName)
        }
    }

    func testTheStandingsAreTheOnesThePageShows() throws {
        let book = try makeBook()
        let expected = try XCTUnwrap(Self.cases["book"]?["standings"]?.arrayValue)
        let rows = try book.standings()
        XCTAssertEqual(rows.map(\.person), expected.map { $0["person"]?.stringValue ?? "?" })
        let table = expected.map { row in
            ["name", "played", "won", "winRate", "averageScore"].map { key in
                row[key].map { $0.stringValue ?? $0.int64Value.map(String.init) ?? "?" } ?? "?"
            }
        }
        XCTAssertEqual(Output.standings(rows, json: false), TextTable(headers: Self.standingsHeaders, rows: table).rendered)
    }
}
