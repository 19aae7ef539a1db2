import Foundation
import XCTest

extension CLIMachine {
    /// Runs a command that must fail: its status, exactly one line on standard error, nothing
    /// on standard output. Returns the line.
    @discardableResult
    func refused(_ arguments: [String], status: Int32? = 1, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try run(arguments, allowFailure: true, file: file, line: line)
        if let status {
            XCTAssertEqual(result.status, status, "\(arguments): \(result.stderr)", file: file, line: line)
        } else {
            XCTAssertNotEqual(result.status, 0, "\(arguments): \(result.stderr)", file: file, line: line)
        }
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "one line: \(result.stderr)", file: file, line: line)
        XCTAssertEqual(result.stdout, "", file: file, line: line)
        return result.stderr
    }

    /// Adds the people (`"Ada Lovelace"`: first and last name) and the game, and starts a match
    /// of it between them, seated by first name; returns the match's record name.
    func startMatch(of game: String, between people: [String], file: StaticString = #filePath, line: UInt = #line) throws -> String {
        for person in people { try run(["person", "add"] + person.split(separator: " ").map(String.init), file: file, line: line) }
        try run(["game", "add", game], file: file, line: line)
        let players = people.compactMap { $0.split(separator: " ").first }.joined(separator: ",")
        return try run(["match", "start", "--game", game, "--players", players], file: file, line: line).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The UUID part of a record name.
    static func uuid(of recordName: String) -> String {
        recordName.components(separatedBy: "|~|").last ?? recordName
    }
}

/// REFs a person can type into a shell without quotes (the UUID, or a prefix of it), ambiguous
/// names listed with short ids, duplicate names refused, and the commands the CLI prints for a
/// person to run quoted for a shell, through the real `scorebook` binary.
final class CLIRefTests: XCTestCase {
    var machine: CLIMachine!

    override func setUp() { machine = CLIMachine("refs") }
    override func tearDown() { machine = nil }

    func startGo() throws -> String {
        try machine.startMatch(of: "Go", between: ["Ada Lovelace", "Alan"])
    }

    func testTheUUIDAloneOrAPrefixOfItNamesARecord() throws {
        let match = try startGo()
        let uuid = CLIMachine.uuid(of: match)
        XCTAssertEqual(try machine.json("match", "show", uuid)["recordName"]?.stringValue, match)
        XCTAssertEqual(try machine.json("match", "show", String(uuid.prefix(6)).lowercased())["recordName"]?.stringValue, match)
        let score = try machine.create("score", "add", "--match", String(uuid.prefix(8)), "--player", "Ada", "5")
        try machine.run("score", "edit", String(CLIMachine.uuid(of: score).prefix(5)), "6")
        XCTAssertEqual(try machine.json("score", "list", "--match", uuid).arrayValue?.first?["value"]?.doubleValue, 6)
        // Three characters are too few to be an id.
        XCTAssertTrue(try machine.refused(["match", "show", String(uuid.prefix(3))], status: 2).contains("no match matches"))
        XCTAssertTrue(try machine.refused(["person", "edit", "Grace", "--email", "g@example.com"], status: 2)
            .contains("no person matches \"Grace\""))
    }

    func testAnAmbiguousREFListsTheCandidatesWithTheirShortIDs() throws {
        let first = try machine.create("person", "add", "Ada", "Lovelace")
        let second = try machine.create("person", "add", "Ada", "Lovelace", "--allow-duplicate")
        let message = try machine.refused(["person", "edit", "Ada Lovelace", "--email", "ada@example.com"], status: 2)
        for name in [first, second] {
            XCTAssertTrue(message.contains("Ada Lovelace (\(CLIMachine.uuid(of: name).prefix(8)))"), message)
        }
        XCTAssertFalse(message.contains("|~|"), "short ids, not record names: \(message)")
        // The short id it lists names one of them.
        try machine.run("person", "edit", String(CLIMachine.uuid(of: second).prefix(8)), "--email", "ada@example.com")
        let people = try machine.json("person", "list").arrayValue ?? []
        XCTAssertEqual(people.first { $0["recordName"]?.stringValue == second }?["emailAddress"]?.stringValue, "ada@example.com")
        XCTAssertEqual(people.first { $0["recordName"]?.stringValue == first }?["emailAddress"], .null)
    }

    func testASecondPersonOrGameOfTheSameNameIsRefusedUnlessInsisted() throws {
        let ada = try machine.create("person", "add", "Ada", "Lovelace")
        let catan = try machine.create("game", "add", "Catan")
        let person = try machine.refused(["person", "add", "ada", "LOVELACE"])
        XCTAssertTrue(person.contains("Ada Lovelace") && person.contains(String(CLIMachine.uuid(of: ada).prefix(8)))
            && person.contains("--allow-duplicate"), person)
        let game = try machine.refused(["game", "add", "CATAN"])
        XCTAssertTrue(game.contains("Catan") && game.contains(String(CLIMachine.uuid(of: catan).prefix(8))), game)
        XCTAssertEqual(try machine.json("person", "list").arrayValue?.count, 1)
        XCTAssertEqual(try machine.json("game", "list").arrayValue?.count, 1)
        // A different last name is another person; --allow-duplicate insists.
        try machine.run("person", "add", "Ada", "Byron")
        try machine.run("person", "add", "Ada", "Lovelace", "--allow-duplicate")
        try machine.run("game", "add", "Catan", "--allow-duplicate")
        XCTAssertEqual(try machine.json("person", "list").arrayValue?.count, 3)
        XCTAssertEqual(try machine.json("game", "list").arrayValue?.count, 2)
        for command in ["person", "game"] {
            XCTAssertTrue(try machine.run(command, "add", "--help").stdout.contains("--allow-duplicate"), command)
        }
    }

    /// The hints name record names, which hold `|~|`: pasted into a shell as printed, they run.
    func testCommandsPrintedForAPersonToRunWorkInAShell() throws {
        let match = try startGo()
        let score = try machine.create("score", "add", "--match", match, "--player", "Ada", "3", "--round", "1")
        let duplicate = try machine.refused(["score", "add", "--match", match, "--player", "Ada", "4", "--round", "1"])
        XCTAssertTrue(duplicate.contains("`scorebook score edit '\(score)' VALUE`"), duplicate)
        try machine.run("match", "finish", match)
        let finished = try machine.refused(["score", "add", "--match", match, "--player", "Ada", "4"])
        let hint = try XCTUnwrap(finished.components(separatedBy: "`").dropFirst().first, finished)
        XCTAssertEqual(hint, "scorebook match reopen '\(match)'")
        // Run exactly that line in a shell, with the binary's path for `scorebook`.
        let binary = DaemonProcess.binaryURL("scorebook").path
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "\"$0\" --store \"$1\" " + hint.dropFirst("scorebook ".count), binary, machine.storePath]
        shell.standardOutput = FileHandle.nullDevice
        shell.standardError = FileHandle.nullDevice
        try shell.run()
        XCTAssertTrue(DaemonProcess.waitForExit(shell, timeout: 60))
        XCTAssertEqual(shell.terminationStatus, 0)
        XCTAssertNil(try machine.json("match", "show", match)["endDate"]?.stringValue, "the pasted hint reopened the match")
    }
}
