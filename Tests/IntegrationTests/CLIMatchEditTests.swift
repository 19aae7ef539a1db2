import Foundation
import XCTest

/// Issue 45, fixing a match after it started: its date, notes, place and game, a late arrival
/// and a wrong seat, with a finished result confirmed as deletions are, through the real binary.
final class CLIMatchEditTests: XCTestCase {
    var machine: CLIMachine!

    override func setUp() { machine = CLIMachine("match-edit") }
    override func tearDown() { machine = nil }

    /// Go and Chess, Ada and Bo in a match of Go with a score each, and Grace.
    func startGo() throws -> String {
        for person in ["Ada", "Bo", "Grace"] { try machine.run("person", "add", person) }
        try machine.run("game", "add", "Go")
        try machine.run("game", "add", "Chess")
        let match = try machine.create("match", "start", "--game", "Go", "--players", "Ada,Bo", "--location", "Pub")
        try machine.run("score", "add", "--match", match, "--player", "Ada", "7")
        try machine.run("score", "add", "--match", match, "--player", "Bo", "5")
        return match
    }

    func testMatchEditChangesDateNotesPlaceAndGame() throws {
        let match = try startGo()
        try machine.run("match", "edit", match, "--date", "2024-03-01T10:00:00Z", "--notes", "rainy", "--location", "Kitchen",
                        "--latitude", "48.85", "--longitude", "2.35", "--game", "Chess")
        let shown = try machine.json("match", "show", match)
        XCTAssertEqual(isoDate(shown["startDate"]?.stringValue ?? ""), isoDate("2024-03-01T10:00:00.000Z"))
        XCTAssertEqual(shown["notes"]?.stringValue, "rainy")
        XCTAssertEqual(shown["location"]?["name"]?.stringValue, "Kitchen")
        XCTAssertEqual(shown["location"]?["latitude"]?.doubleValue, 48.85)
        let chess = try XCTUnwrap(try machine.json("game", "list").arrayValue?.first { $0["name"]?.stringValue == "Chess" })
        XCTAssertEqual(shown["game"]?.stringValue, chess["recordName"]?.stringValue)
        XCTAssertEqual(try machine.json("match", "list", "--game", "Chess").arrayValue?.count, 1)

        // Empty values clear the notes and remove the place.
        try machine.run("match", "edit", match, "--notes", "", "--location", "")
        let cleared = try machine.json("match", "show", match)
        XCTAssertEqual(cleared["notes"], .null)
        XCTAssertEqual(cleared["location"], .null)
        let nothing = try machine.refused(["match", "edit", match])
        XCTAssertTrue(nothing.contains("give what to change"), nothing)
    }

    func testALateArrivalAndAWrongSeatInAnOpenMatchNeedNoConfirmation() throws {
        let match = try startGo()
        let player = try machine.create("match", "player", "add", match, "Grace")
        XCTAssertTrue(player.hasPrefix("Player|~|"), player)
        try machine.run("score", "add", "--match", match, "--player", "Grace", "9")
        let players = try machine.json("match", "show", match)["players"]?.arrayValue ?? []
        XCTAssertEqual(players.compactMap { $0["name"]?.stringValue }.sorted(), ["Ada", "Bo", "Grace"])
        let twice = try machine.refused(["match", "player", "add", match, "Grace"])
        XCTAssertTrue(twice.contains("Grace already plays in this match"), twice)

        let removed = try machine.run("match", "player", "remove", match, "Bo").stdout
        XCTAssertTrue(removed.hasPrefix("deleted Player \"Bo\""), removed)
        let after = try machine.json("match", "show", match)["players"]?.arrayValue ?? []
        XCTAssertEqual(after.compactMap { $0["name"]?.stringValue }.sorted(), ["Ada", "Grace"])
        XCTAssertEqual(try machine.json("score", "list", "--match", match).arrayValue?.count, 2, "Bo's score went with Bo")
    }

    func testChangingAFinishedResultNeedsYesAsADeletionDoes() throws {
        let match = try startGo()
        try machine.run("match", "finish", match)
        let before = try machine.json("match", "show", match)

        for arguments in [["match", "player", "add", match, "Grace"], ["match", "player", "remove", match, "Bo"],
                          ["match", "edit", match, "--game", "Chess"]]
        {
            let message = try machine.refused(arguments)
            XCTAssertTrue(message.contains("finished match"), "\(arguments): \(message)")
            XCTAssertTrue(message.contains("add --yes to change it (nothing was changed)"), "\(arguments): \(message)")
        }
        XCTAssertEqual(try machine.json("match", "show", match), before, "nothing changed")
        // Notes and the date change no result: no question.
        try machine.run("match", "edit", match, "--notes", "a good one")

        let added = try machine.run(["match", "player", "add", match, "Grace", "--yes"])
        XCTAssertTrue(added.stderr.contains("adding Grace to the finished match"), added.stderr)
        let removed = try machine.run(["match", "player", "remove", match, "Bo", "--yes"])
        XCTAssertTrue(removed.stderr.contains("removing Bo from the finished match"), removed.stderr)
        XCTAssertTrue(removed.stderr.contains("deletes 1 score; its result changes"), removed.stderr)
        try machine.run(["match", "edit", match, "--game", "Chess", "--yes"])
        let players = try machine.json("match", "show", match)["players"]?.arrayValue ?? []
        XCTAssertEqual(players.compactMap { $0["name"]?.stringValue }.sorted(), ["Ada", "Grace"])
    }
}
