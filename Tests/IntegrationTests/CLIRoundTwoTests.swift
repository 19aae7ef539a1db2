import Foundation
import XCTest

/// Issue 45, what a scorekeeper meets without a server: renames onto another's name, a
/// negative round, help before the store is read, a game's name given for a match, and books
/// named by their titles, through the real `scorebook` binary.
final class CLIRoundTwoTests: XCTestCase {
    var machine: CLIMachine!

    override func setUp() { machine = CLIMachine("round-two") }
    override func tearDown() { machine = nil }

    func testEditingAPersonOrAGameOntoAnotherOnesNameIsRefused() throws {
        try machine.run("person", "add", "Ada", "Lovelace")
        try machine.run("person", "add", "Grace", "Hopper")
        try machine.run("game", "add", "Catan")
        try machine.run("game", "add", "Golf")

        let person = try machine.refused(["person", "edit", "Grace", "--first", "Ada", "--last", "Lovelace"])
        XCTAssertTrue(person.contains("a person named \"Ada Lovelace\" already exists"), person)
        let game = try machine.refused(["game", "edit", "Golf", "--name", "catan"])
        XCTAssertTrue(game.contains("a game named \"Catan\" already exists"), game)

        // Nothing changed, and both names still resolve.
        XCTAssertEqual(try machine.json("person", "list").arrayValue?.compactMap { $0["lastName"]?.stringValue }.sorted(),
                       ["Hopper", "Lovelace"])
        XCTAssertEqual(try machine.json("game", "list").arrayValue?.compactMap { $0["name"]?.stringValue }, ["Catan", "Golf"])
        // A change that keeps one's own name (other case, or another field) is no duplicate.
        try machine.run("game", "edit", "Golf", "--name", "golf")
        try machine.run("person", "edit", "Ada", "--first", "Ada", "--email", "ada@example.com")
        try machine.run("person", "edit", "Grace", "--last", "Brewster Hopper")
    }

    func testANegativeOrZeroRoundIsAWrongRoundNotAMissingValue() throws {
        try machine.run("person", "add", "Ada")
        try machine.run("game", "add", "Go")
        let match = try machine.create("match", "start", "--game", "Go", "--players", "Ada")
        try machine.run("score", "add", "--match", match, "--player", "Ada", "5")
        for arguments in [["score", "add", "--match", match, "--player", "Ada", "--round", "-1", "3"],
                          ["score", "add", "--match", match, "--player", "Ada", "3", "--round", "-1"],
                          ["score", "delete", "--match", match, "--player", "Ada", "--round", "-1"],
                          ["score", "edit", "--match", match, "--player", "Ada", "--round", "-2", "4"]]
        {
            let message = try machine.refused(arguments)
            XCTAssertFalse(message.contains("Missing value"), "\(arguments): \(message)")
            XCTAssertTrue(message.contains("rounds start at 1"), "\(arguments): \(message)")
        }
        // Negative scores are still values, with or without a round.
        try machine.run("score", "add", "--match", match, "--player", "Ada", "--round", "2", "-4")
        XCTAssertEqual(try machine.json("score", "list", "--match", match).arrayValue?.compactMap { $0["value"]?.doubleValue }, [5, -4])
    }

    func testHelpTakesTheGlobalOptionsAndNamesAGuideThatExists() throws {
        let help = try DaemonProcess.run("scorebook", ["--store", machine.storePath, "help", "account"])
        XCTAssertEqual(help.status, 0, help.stderr)
        XCTAssertTrue(help.stdout.contains("login"), help.stdout)
        XCTAssertFalse(help.stdout.contains("ACCOUNTS.md"), help.stdout)
        XCTAssertTrue(help.stdout.contains("docs/guide/accounts.md"), help.stdout)
        let guide = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/guide/accounts.md")
        XCTAssertTrue(FileManager.default.fileExists(atPath: guide.path), guide.path)
        XCTAssertFalse(FileManager.default.fileExists(atPath: machine.storePath), "help opens no store")
    }

    func testAGameNameGivenForAMatchSaysHowMatchesAreNamed() throws {
        try machine.run("person", "add", "Ada")
        try machine.run("game", "add", "Golf")
        _ = try machine.create("match", "start", "--game", "Golf", "--players", "Ada")
        let message = try machine.refused(["match", "show", "Golf"], status: 2)
        XCTAssertFalse(message.contains("a REF is a name"), message)
        XCTAssertTrue(message.contains("a match is named by its record name"), message)
        XCTAssertTrue(message.contains("scorebook match list --game Golf"), message)
        let unknown = try machine.refused(["match", "show", "Chess"], status: 2)
        XCTAssertTrue(unknown.contains("see 'scorebook match list'"), unknown)
    }

    func testABookIsDeletedByItsTitleAndOnlyABookNameIsOfferedToCreate() throws {
        try machine.run("book", "create", "friday")
        try machine.run("--book", "friday", "game", "add", "Catan")
        try machine.run("book", "rename", "friday", "Friday games")
        XCTAssertEqual(try machine.run("book", "delete", "Friday games").stdout, "deleted book Friday games\n")
        XCTAssertEqual(try machine.json("book", "list").arrayValue?.compactMap { $0["zoneName"]?.stringValue }, ["ScorebookData"])

        // A title with a space is no book name: `book create` would refuse it, so it is not offered.
        let titled = try machine.refused(["--book", "Friday games", "game", "list"])
        XCTAssertTrue(titled.contains("no book named \"Friday games\""), titled)
        XCTAssertFalse(titled.contains("book create"), titled)
        let named = try machine.refused(["--book", "saturday", "game", "list"])
        XCTAssertTrue(named.contains("run 'scorebook book create saturday'"), named)
    }

    func testMatchListTakesALimitOfTheNewest() throws {
        try machine.run("person", "add", "Ada")
        try machine.run("game", "add", "Go")
        var started: [String] = []
        for day in 1...4 {
            started.append(try machine.create("match", "start", "--game", "Go", "--players", "Ada", "--date", "2024-03-0\(day)T10:00:00Z"))
        }
        XCTAssertEqual(try machine.json("match", "list", "--limit", "2").arrayValue?.compactMap { $0["recordName"]?.stringValue },
                       [started[3], started[2]])
        XCTAssertEqual(try machine.run("match", "list", "--limit", "1").lines.count, 2, "a header and one match")
        XCTAssertEqual(try machine.json("match", "list", "--limit", "10").arrayValue?.count, 4)
        for bad in ["0", "-1"] {
            let message = try machine.refused(["match", "list", "--limit", bad], status: 64)
            XCTAssertTrue(message.contains("--limit takes a number of matches, 1 or more"), message)
        }
    }

    func testMatchShowMentionsTheMatchsPhotos() throws {
        try machine.run("person", "add", "Ada")
        try machine.run("game", "add", "Go")
        let match = try machine.create("match", "start", "--game", "Go", "--players", "Ada")
        XCTAssertFalse(try machine.run("match", "show", match).stdout.contains("photos"))
        let picture = machine.directory.appendingPathComponent("table.png")
        try Data(pngSignature + (8..<2048).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: picture)
        let first = try machine.create("match", "photo", "add", match, picture.path)
        let second = try machine.create("match", "photo", "add", match, picture.path)
        let shown = try machine.run("match", "show", match).stdout
        XCTAssertTrue(shown.contains("photos: 2 (scorebook match photos '\(match)')"), shown)
        XCTAssertEqual(try machine.json("match", "show", match)["photos"]?.arrayValue?.compactMap(\.stringValue), [first, second].sorted())
    }

    /// The tour runs right after the demo: it uses the binaries the demo built, and a release
    /// build is offered only with what it costs.
    func testTheReadmeTourReusesTheDemosBinaries() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let demo = try String(contentsOf: root.appendingPathComponent("scripts/demo.sh"), encoding: .utf8)
        let demoBin = try XCTUnwrap(demo.split(separator: "\n").first { $0.hasPrefix("BIN=") }.map(String.init))
        let tour = try XCTUnwrap(readme.range(of: "## A five-minute tour").map { String(readme[$0.upperBound...]) })
        let lines = tour.split(separator: "\n").map(String.init)
        let binLine = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("BIN=") }, tour)
        XCTAssertEqual(lines[binLine], demoBin, "the tour's first binaries are the demo's")
        // No command line of the tour starts a release build before saying how long it takes.
        XCTAssertFalse(lines.contains { $0.hasPrefix("swift build -c release") }, tour)
        let firstRelease = try XCTUnwrap(lines.firstIndex { $0.contains("swift build -c release") })
        XCTAssertTrue(lines[firstRelease...(firstRelease + 1)].joined().contains("about 15 minutes on two cores")
                      || lines[firstRelease].contains("15 minutes"), lines[firstRelease])
    }
}
