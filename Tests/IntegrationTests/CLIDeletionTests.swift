import Foundation
import XCTest

/// Deleting a person, game or match that finished matches depend on: what goes is printed
/// first, and without a terminal `--yes` is needed (nothing changes otherwise), through the real
/// `scorebook` binary (whose standard input here is not a terminal).
final class CLIDeletionTests: XCTestCase {
    var machine: CLIMachine!

    override func setUp() { machine = CLIMachine("deletions") }
    override func tearDown() { machine = nil }

    /// Go between Ada and Alan, two scores each, finished. Returns the match.
    func finishedGo() throws -> String {
        let match = try machine.startMatch(of: "Go", between: ["Ada", "Alan"])
        for (player, value) in [("Ada", "3"), ("Alan", "5"), ("Ada", "4"), ("Alan", "1")] {
            try machine.run("score", "add", "--match", match, "--player", player, value)
        }
        try machine.run("match", "finish", match)
        return match
    }

    func testDeletingSomeoneWhoPlayedAFinishedMatchNeedsYes() throws {
        let match = try finishedGo()
        let before = try machine.snapshot()
        XCTAssertEqual(try machine.json("match", "show", match)["winner"]?.stringValue,
                       try machine.json("person", "list").arrayValue?.first { $0["firstName"]?.stringValue == "Ada" }?["recordName"]?.stringValue)
        let refusal = try machine.refused(["person", "delete", "Ada"])
        XCTAssertTrue(refusal.contains("deletes 1 player, 2 scores; finished match results change (1 match)"), refusal)
        XCTAssertTrue(refusal.contains("--yes") && refusal.contains("nothing was deleted"), refusal)
        XCTAssertEqual(try machine.snapshot(), before, "nothing changed")

        let deleted = try machine.run("person", "delete", "Ada", "--yes")
        XCTAssertTrue(deleted.stderr.contains("deletes 1 player, 2 scores"), deleted.stderr)
        XCTAssertEqual(try machine.json("person", "list").arrayValue?.compactMap { $0["firstName"]?.stringValue }, ["Alan"])
        XCTAssertEqual(try machine.json("match", "show", match)["players"]?.arrayValue?.count, 1)
    }

    func testDeletingAFinishedMatchOrItsGameNeedsYes() throws {
        let match = try finishedGo()
        let before = try machine.snapshot()
        XCTAssertTrue(try machine.refused(["game", "delete", "Go"]).contains("deletes 1 match, 2 players, 4 scores"))
        XCTAssertTrue(try machine.refused(["match", "delete", match]).contains("deletes 2 players, 4 scores; finished match"))
        XCTAssertEqual(try machine.snapshot(), before, "nothing changed")
        try machine.run("match", "delete", match, "--yes")
        XCTAssertEqual(try machine.json("match", "list").arrayValue?.count, 0)
        for command in ["person", "game", "match"] {
            XCTAssertTrue(try machine.run(command, "delete", "--help").stdout.contains("--yes"), command)
        }
    }

    /// On a terminal the deletion is asked about: anything but yes deletes nothing.
    func testOnATerminalTheDeletionIsAsked() throws {
        let match = try finishedGo()
        let before = try machine.snapshot()
        for (answer, status) in [("n\n", Int32(1)), ("\n", 1), ("y\n", 0)] {
            let terminal = try PseudoTerminal()
            let process = Process()
            process.executableURL = DaemonProcess.binaryURL("scorebook")
            process.arguments = ["--store", machine.storePath, "match", "delete", match]
            process.standardInput = terminal.replica
            let errors = Pipe()
            process.standardOutput = FileHandle.nullDevice
            process.standardError = errors
            try process.run()
            let collected = PipeCollector(errors.fileHandleForReading)
            terminal.type(answer)
            XCTAssertTrue(DaemonProcess.waitForExit(process, timeout: 60))
            XCTAssertEqual(process.terminationStatus, status, answer.debugDescription)
            _ = collected.waitForEOF(timeout: 5)
            let asked = collected.text
            XCTAssertTrue(asked.contains("deletes 2 players, 4 scores; finished match results change (1 match). Delete? [y/N]"), asked)
            if status != 0 { XCTAssertEqual(try machine.snapshot(), before, "\(answer.debugDescription) deleted nothing") }
        }
        XCTAssertEqual(try machine.json("match", "list").arrayValue?.count, 0)
    }

    func testNothingIsAskedWhenNoFinishedMatchDependsOnIt() throws {
        let match = try finishedGo()
        try machine.run("person", "add", "Grace")
        try machine.run("game", "add", "Chess")
        let open = try machine.create("match", "start", "--game", "Chess", "--players", "Grace,Alan")
        try machine.run("score", "add", "--match", open, "--player", "Grace", "1")
        // Grace played only an open match; Chess has only that match.
        let grace = try machine.run("person", "delete", "Grace")
        XCTAssertEqual(grace.stderr, "")
        try machine.run("game", "delete", "Chess")
        XCTAssertEqual(try machine.json("match", "list").arrayValue?.compactMap { $0["recordName"]?.stringValue }, [match])
        // A reopened match is no longer finished.
        try machine.run("match", "reopen", match)
        try machine.run("match", "delete", match)
        XCTAssertEqual(try machine.json("match", "list").arrayValue?.count, 0)
    }
}
