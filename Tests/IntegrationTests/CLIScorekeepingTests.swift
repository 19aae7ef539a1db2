import Foundation
import RecordModel
import XCTest

/// Issue 15 through the real `scorebook` binary (offline unless a test says otherwise): score
/// list, edit and delete; finished matches; rounds; match details; person and game edits.
final class CLIScorekeepingTests: XCTestCase {
    var machine: CLIMachine!

    override func setUp() {
        machine = CLIMachine("keeper")
    }

    override func tearDown() {
        machine = nil
    }

    /// Catan with Ann Lee and Bob, rounds 1 and 2 for both. Returns the match's record name.
    func startCatan(on machine: CLIMachine) throws -> String {
        try machine.run("person", "add", "Ann", "Lee")
        try machine.run("person", "add", "Bob")
        try machine.run("game", "add", "Catan")
        let match = try machine.create("match", "start", "--game", "Catan", "--players", "Ann,Bob")
        try machine.run("score", "add", "--match", match, "--player", "Ann", "10")
        try machine.run("score", "add", "--match", match, "--player", "Bob", "7")
        try machine.run("score", "add", "--match", match, "--player", "Ann", "2")
        try machine.run("score", "add", "--match", match, "--player", "Bob", "-3")
        return match
    }

    /// Runs a command that must fail: its status, and exactly one line on standard error.
    func refused(_ arguments: String..., status: Int32 = 1, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try machine.run(arguments, allowFailure: true, file: file, line: line)
        XCTAssertEqual(result.status, status, "\(arguments): \(result.stderr)", file: file, line: line)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "one line: \(result.stderr)", file: file, line: line)
        XCTAssertEqual(result.stdout, "", file: file, line: line)
        return result.stderr
    }

    func testScoreListShowsEachScoreWithItsPlayerRoundValueAndWhoEnteredIt() throws {
        let match = try startCatan(on: machine)
        let scores = try machine.json("score", "list", "--match", match).arrayValue ?? []
        XCTAssertEqual(scores.map { $0["name"]?.stringValue }, ["Ann Lee", "Bob", "Ann Lee", "Bob"], "by round, then seat")
        XCTAssertEqual(scores.map { $0["round"]?.int64Value }, [1, 1, 2, 2])
        XCTAssertEqual(scores.map { $0["value"]?.doubleValue }, [10, 7, 2, -3])
        let shown = try machine.json("match", "show", match)
        let players = Dictionary(uniqueKeysWithValues: (shown["players"]?.arrayValue ?? []).map {
            ($0["name"]?.stringValue ?? "", $0)
        })
        for score in scores {
            XCTAssertTrue(score["recordName"]?.stringValue?.hasPrefix("Score|~|") == true)
            let player = players[score["name"]?.stringValue ?? ""]
            XCTAssertEqual(score["player"], player?["recordName"], "the Player record")
            XCTAssertEqual(score["person"], player?["person"], "the Person record")
            XCTAssertEqual(score["enteredBy"], .null, "a store that never logged in does not know its user")
            XCTAssertEqual(Set(score.objectValue?.keys.map { $0 } ?? []),
                           ["recordName", "player", "person", "name", "round", "value", "enteredBy"])
        }
        let first = scores[0]["recordName"]?.stringValue ?? ""
        let text = try machine.run("score", "list", "--match", match).lines
        XCTAssertEqual(text.first?.split(separator: " ", omittingEmptySubsequences: true),
                       ["RECORD", "NAME", "PLAYER", "ROUND", "VALUE", "ENTERED", "BY"])
        XCTAssertEqual(text.count, 5)
        XCTAssertEqual(text[1].split(separator: " ", omittingEmptySubsequences: true), [Substring(first), "Ann", "Lee", "1", "10", "-"])
        XCTAssertTrue(try refused("score", "list", "--match", "nothing-like-it", status: 2).contains("no match matches"))
    }

    func testScoreEditAndDeleteChangeTheTotals() throws {
        let match = try startCatan(on: machine)
        let scores = try machine.json("score", "list", "--match", match).arrayValue ?? []
        let annRound1 = scores[0]["recordName"]?.stringValue ?? ""
        let bobRound2 = scores[3]["recordName"]?.stringValue ?? ""

        let edited = try machine.json("score", "edit", annRound1, "-4", "--round", "5")
        XCTAssertEqual(edited["value"]?.doubleValue, -4, "a negative value is a value, not an option")
        XCTAssertEqual(edited["round"]?.int64Value, 5)
        try machine.run("score", "edit", annRound1, "--round", "5", "--", "-4.5")
        XCTAssertEqual(try machine.json("score", "list", "--match", match).arrayValue?.first { $0["recordName"]?.stringValue == annRound1 }?["value"]?.doubleValue,
                       -4.5, "VALUE may follow a -- that ends the options")
        _ = try machine.json("score", "edit", annRound1, "-4", "--round", "5")
        // A UUID prefix is a REF for scores too.
        let prefix = String(bobRound2.dropFirst("Score|~|".count).prefix(8))
        XCTAssertEqual(try machine.run("score", "delete", prefix).lines, ["deleted Score \"-3 in round 2\" (\(bobRound2))"])

        let totals = (try machine.json("match", "show", match)["players"]?.arrayValue ?? []).map {
            ($0["name"]?.stringValue ?? "", $0["total"]?.doubleValue ?? .nan)
        }
        XCTAssertEqual(totals.map(\.0), ["Bob", "Ann Lee"])
        XCTAssertEqual(totals.map(\.1), [7, -2])
        let after = try machine.json("score", "list", "--match", match).arrayValue ?? []
        XCTAssertEqual(after.map { $0["round"]?.int64Value }, [1, 2, 5])
        XCTAssertEqual(try refused("score", "edit", "Score|~|NOPE", "3", status: 2).hasPrefix("error: no score matches"), true)
        _ = try refused("score", "edit", annRound1, "many", status: 64)
    }

    func testAFinishedMatchRefusesScoreChangesUntilReopened() throws {
        let match = try startCatan(on: machine)
        let score = try machine.json("score", "list", "--match", match).arrayValue?.first?["recordName"]?.stringValue ?? ""
        try machine.run("match", "finish", match)
        let before = try machine.run("score", "list", "--match", match, "--json").stdout
        for arguments in [["score", "add", "--match", match, "--player", "Bob", "5"], ["score", "edit", score, "99"],
                          ["score", "delete", score]]
        {
            let result = try machine.run(arguments, allowFailure: true)
            XCTAssertEqual(result.status, 1, "\(arguments): \(result.stderr)")
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
            XCTAssertTrue(result.stderr.contains("match reopen"), result.stderr)
            XCTAssertTrue(result.stderr.contains("finished"), result.stderr)
        }
        XCTAssertEqual(try machine.run("score", "list", "--match", match, "--json").stdout, before, "nothing changed")
        XCTAssertEqual(try machine.json("match", "show", match)["winner"]?.stringValue?.hasPrefix("Person|~|"), true)

        XCTAssertEqual(try machine.run("match", "reopen", match).lines, [match])
        let reopened = try machine.json("match", "show", match)
        XCTAssertEqual(reopened["endDate"], .null)
        XCTAssertEqual(reopened["winner"], .null, "no winner while in progress")
        try machine.run("score", "add", "--match", match, "--player", "Bob", "5")
        try machine.run("score", "edit", score, "11")
        XCTAssertEqual(try machine.json("score", "list", "--match", match).arrayValue?.count, 5)
        XCTAssertEqual(try machine.json("match", "reopen", match)["endDate"], .null, "reopening an open match leaves it open")
    }

    func testASecondScoreForTheSamePlayerAndRoundIsRefusedAndNamesScoreEdit() throws {
        let match = try startCatan(on: machine)
        let existing = try machine.json("score", "list", "--match", match).arrayValue?.first?["recordName"]?.stringValue ?? ""
        let message = try refused("score", "add", "--match", match, "--player", "Ann", "4", "--round", "1")
        XCTAssertTrue(message.contains("score edit '\(existing)' VALUE"), message)
        XCTAssertTrue(message.contains("round 1"), message)
        // Moving another score of Ann's into round 1 is the same second score.
        let annRound2 = try machine.json("score", "list", "--match", match).arrayValue?[2]["recordName"]?.stringValue ?? ""
        XCTAssertTrue(try refused("score", "edit", annRound2, "4", "--round", "1").contains("score edit '\(existing)' VALUE"))
        // Bob may score in round 1 of his own, and Ann without --round goes on to round 3.
        try machine.run("score", "add", "--match", match, "--player", "Ann", "4")
        XCTAssertEqual(try machine.json("score", "list", "--match", match).arrayValue?.map { $0["round"]?.int64Value }, [1, 1, 2, 2, 3])
    }

    func testMatchShowRoundsIsATableOfRoundsByPlayersWithTotals() throws {
        let match = try startCatan(on: machine)
        try machine.run("score", "add", "--match", match, "--player", "Bob", "0.5", "--round", "4")
        let lines = try machine.run("match", "show", match, "--rounds").lines
        XCTAssertEqual(Array(lines.suffix(5)), [
            "ROUND  Ann Lee  Bob",
            "1      10       7",
            "2      2        -3",
            "4               0.5",
            "TOTAL  12       4.5",
        ])
        XCTAssertTrue(lines.contains("winner: none yet (in progress)"), "the usual detail comes first")
        XCTAssertFalse(try machine.run("match", "show", match).stdout.contains("ROUND"), "only with --rounds")

        let json = try machine.json("match", "show", match, "--rounds")
        let players = json["players"]?.arrayValue ?? []
        let ann = players.first { $0["name"]?.stringValue == "Ann Lee" }?["recordName"]?.stringValue ?? ""
        let bob = players.first { $0["name"]?.stringValue == "Bob" }?["recordName"]?.stringValue ?? ""
        let rounds = json["rounds"]?.arrayValue ?? []
        XCTAssertEqual(rounds.map { $0["round"]?.int64Value }, [1, 2, 4])
        XCTAssertEqual(rounds.map { $0["scores"]?[ann]?.doubleValue }, [10, 2, nil])
        XCTAssertEqual(rounds.map { $0["scores"]?[bob]?.doubleValue }, [7, -3, 0.5])
    }

    func testMatchStartTakesADateNotesAndALocationThatMatchShowPrints() throws {
        try machine.run("person", "add", "Ann")
        try machine.run("game", "add", "Catan")
        let match = try machine.create("match", "start", "--game", "Catan", "--players", "Ann", "--date", "2026-11-20T19:30:00+01:00",
                                       "--notes", "Cup final, second leg", "--location", "Kitchen table",
                                       "--latitude", "-33.8688", "--longitude", "151.2093")
        let shown = try machine.json("match", "show", match)
        XCTAssertEqual(shown["startDate"]?.stringValue, "2026-11-20T18:30:00.000Z")
        XCTAssertEqual(shown["notes"]?.stringValue, "Cup final, second leg")
        XCTAssertEqual(shown["location"]?["name"]?.stringValue, "Kitchen table")
        XCTAssertEqual(shown["location"]?["latitude"]?.doubleValue, -33.8688)
        XCTAssertEqual(shown["location"]?["longitude"]?.doubleValue, 151.2093)
        XCTAssertEqual(shown["location"]?["recordName"]?.stringValue?.hasPrefix("MatchLocation|~|"), true)
        let text = try machine.run("match", "show", match).lines
        XCTAssertTrue(text.contains("notes: Cup final, second leg"), "\(text)")
        XCTAssertTrue(text.contains("location: Kitchen table (-33.8688, 151.2093)"), "\(text)")

        // The MatchLocation is a record of its own, deleted with its match.
        let records = try machine.storedRecords()
        let location = records.values.first { $0.recordType == "MatchLocation" }
        XCTAssertEqual(location?.fields["match"]?.referenceValue?.recordName, match)
        XCTAssertEqual(location?.fields["location"]?.locationValue?.latitude, -33.8688)
        try machine.run("match", "delete", match)
        XCTAssertFalse(try machine.storedRecords().values.contains { $0.recordType == "MatchLocation" })

        // A name alone is a location; a match without one shows none.
        let plain = try machine.create("match", "start", "--game", "Catan", "--players", "Ann", "--location", "Pub")
        XCTAssertEqual(try machine.json("match", "show", plain)["location"]?["latitude"], .null)
        XCTAssertTrue(try machine.run("match", "show", plain).lines.contains("location: Pub"))
        let bare = try machine.create("match", "start", "--game", "Catan", "--players", "Ann", "--date", "2026-11-20")
        XCTAssertEqual(try machine.json("match", "show", bare)["location"], .null)
        XCTAssertEqual(try machine.json("match", "show", bare)["notes"], .null)
    }

    func testBadMatchStartOptionsAreRefusedAndCreateNothing() throws {
        try machine.run("person", "add", "Ann")
        try machine.run("game", "add", "Catan")
        let start = ["match", "start", "--game", "Catan", "--players", "Ann"]
        for (extra, expected) in [
            (["--location", "Pub", "--latitude", "10"], "go together"),
            (["--location", "Pub", "--longitude", "10"], "go together"),
            (["--latitude", "10", "--longitude", "10"], "need --location"),
            (["--location", "Pub", "--latitude", "91", "--longitude", "0"], "between -90 and 90"),
            (["--location", "Pub", "--latitude", "0", "--longitude", "-180.5"], "between -180 and 180"),
            (["--location", "  ", "--latitude", "0", "--longitude", "0"], "location name"),
            (["--location", "Pub\u{1B}[2J"], "location name must not contain control characters"),
            (["--location", String(repeating: "p", count: 201)], "the most is 200"),
            (["--date", "last tuesday"], "ISO-8601"),
            (["--date", "2026-13-45T00:00:00Z"], "ISO-8601"),
        ] {
            let result = try machine.run(start + extra, allowFailure: true)
            XCTAssertEqual(result.status, 1, "\(extra): \(result.stderr)")
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
            XCTAssertTrue(result.stderr.contains(expected), "\(extra): \(result.stderr)")
        }
        XCTAssertEqual(try machine.json("match", "list").arrayValue?.count, 0)
        XCTAssertFalse(try machine.storedRecords().values.contains { $0.recordType == "MatchLocation" || $0.recordType == "Player" })
    }

    func testPersonEditAndGameEdit() throws {
        let ann = try machine.create("person", "add", "Ann", "Lee", "--email", "ann@example.com")
        let edited = try machine.json("person", "edit", "Ann Lee", "--first", "Anne", "--last", "Leigh", "--email", "")
        XCTAssertEqual(edited["recordName"]?.stringValue, ann)
        XCTAssertEqual(edited["firstName"]?.stringValue, "Anne")
        XCTAssertEqual(edited["lastName"]?.stringValue, "Leigh")
        XCTAssertEqual(edited["emailAddress"], .null, "an empty value clears the email")
        XCTAssertEqual(try machine.run("person", "edit", "Anne", "--email", "a@example.com").lines, [ann])
        XCTAssertEqual(try machine.json("person", "list").arrayValue?.first?["emailAddress"]?.stringValue, "a@example.com")
        XCTAssertTrue(try refused("person", "edit", "Anne", "--first", " ").contains("first name"))
        _ = try refused("person", "edit", "Zed", "--first", "Z", status: 2)

        try machine.run("person", "add", "Bob")
        let golf = try machine.create("game", "add", "Minigolf", "--low-score-wins")
        let match = try machine.create("match", "start", "--game", "Minigolf", "--players", "Anne,Bob")
        try machine.run("score", "add", "--match", match, "--player", "Anne", "30")
        try machine.run("score", "add", "--match", match, "--player", "Bob", "40")
        try machine.run("match", "finish", match)
        XCTAssertEqual(try machine.json("match", "show", match)["winner"]?.stringValue, ann)

        let game = try machine.json("game", "edit", "Minigolf", "--name", "Crazy Golf", "--low-score-wins", "false")
        XCTAssertEqual(game["recordName"]?.stringValue, golf)
        XCTAssertEqual(game["name"]?.stringValue, "Crazy Golf")
        XCTAssertEqual(game["lowScoreWins"]?.boolValue, false)
        XCTAssertEqual(try machine.json("match", "show", match)["players"]?.arrayValue?.first?["name"]?.stringValue, "Bob",
                       "high score wins: 40 beats 30")
        try machine.run("game", "edit", "Crazy Golf", "--low-score-wins", "true")
        XCTAssertEqual(try machine.json("game", "list").arrayValue?.first?["lowScoreWins"]?.boolValue, true)
        XCTAssertEqual(try machine.json("match", "show", match)["players"]?.arrayValue?.first?["name"]?.stringValue, "Anne Leigh",
                       "low score wins: 30 beats 40")
        XCTAssertEqual(try machine.json("match", "show", match)["winner"]?.stringValue, ann)
        _ = try refused("game", "edit", "Crazy Golf", "--low-score-wins", "maybe", status: 64)
        XCTAssertTrue(try refused("game", "edit", "Crazy Golf", "--name", "").contains("a game's name must not be empty"))
        _ = try refused("game", "edit", "Chess", "--name", "Go", status: 2)
    }
}
