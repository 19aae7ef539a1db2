import Foundation
import XCTest

/// Scores named by their place (match, player, round), rounds counted from 1, and a decimal
/// comma, through the real `scorebook` binary.
final class CLIScoreByPlaceTests: XCTestCase {
    var machine: CLIMachine!
    var match = ""

    override func setUpWithError() throws {
        machine = CLIMachine("places")
        match = try machine.startMatch(of: "Go", between: ["Ada", "Alan"])
        for (player, value) in [("Ada", "3"), ("Alan", "5"), ("Ada", "4")] {
            try machine.run("score", "add", "--match", match, "--player", player, value)
        }
    }

    override func tearDown() { machine = nil }

    /// `[round: value]` of a player's scores.
    func rounds(of name: String) throws -> [Int64: Double] {
        var rounds: [Int64: Double] = [:]
        for line in try machine.json("score", "list", "--match", match).arrayValue ?? [] where line["name"]?.stringValue == name {
            rounds[line["round"]?.int64Value ?? 0] = line["value"]?.doubleValue
        }
        return rounds
    }

    func testAScoreIsEditedAndDeletedByItsPlace() throws {
        try machine.run("score", "edit", "--match", match, "--player", "Ada", "--round", "2", "9")
        try machine.run("score", "edit", "--match", match, "--player", "Alan", "--round", "1", "--", "-2")
        XCTAssertEqual(try rounds(of: "Ada"), [1: 3, 2: 9])
        XCTAssertEqual(try rounds(of: "Alan"), [1: -2])
        try machine.run("score", "delete", "--match", match, "--player", "Ada", "--round", "1")
        XCTAssertEqual(try rounds(of: "Ada"), [2: 9])
        XCTAssertTrue(try machine.refused(["score", "delete", "--match", match, "--player", "Ada", "--round", "1"], status: 2)
            .contains("Ada has no score in round 1"))
        XCTAssertTrue(try machine.refused(["score", "edit", "--match", match, "--player", "Ada", "7"]).contains("--round"))
        let help = try machine.run("score", "edit", "--help").stdout + machine.run("score", "delete", "--help").stdout
        XCTAssertTrue(help.contains("--match") && help.contains("--player") && help.contains("--round"), help)
    }

    func testRoundsStartAtOne() throws {
        let score = try XCTUnwrap(try machine.json("score", "list", "--match", match).arrayValue?.first?["recordName"]?.stringValue)
        let attempts: [[String]] = [
            ["score", "add", "--match", match, "--player", "Alan", "--round", "0", "1"],
            ["score", "add", "--match", match, "--player", "Alan", "--round=-1", "1"],
            ["score", "edit", score, "1", "--round", "0"],
            ["score", "edit", "--match", match, "--player", "Ada", "--round", "0", "1"],
            ["score", "delete", "--match", match, "--player", "Ada", "--round", "0"],
        ]
        for arguments in attempts {
            XCTAssertTrue(try machine.refused(arguments, status: nil).contains("rounds start at 1"), "\(arguments)")
        }
        XCTAssertEqual(try rounds(of: "Ada"), [1: 3, 2: 4])
        XCTAssertEqual(try rounds(of: "Alan"), [1: 5])
    }

    func testADecimalCommaGetsTheHintToWriteAPoint() throws {
        let added = try machine.refused(["score", "add", "--match", match, "--player", "Alan", "1,5"], status: nil)
        XCTAssertTrue(added.contains("write 1.5"), added)
        let edited = try machine.refused(["score", "edit", "--match", match, "--player", "Ada", "--round", "1", "2,25"], status: nil)
        XCTAssertTrue(edited.contains("write 2.25"), edited)
        XCTAssertFalse(try machine.refused(["score", "add", "--match", match, "--player", "Alan", "abc"], status: nil).contains("write"))
        try machine.run("score", "add", "--match", match, "--player", "Alan", "1.5")
        XCTAssertEqual(try rounds(of: "Alan"), [1: 5, 2: 1.5])
    }
}
