import Foundation
import SQLiteDB
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Typos, match order, emoji in tables, a file that is not a store, and Ctrl-C, through the real
/// `scorebook` binary.
final class CLIPolishTests: XCTestCase {
    var machine: CLIMachine!

    override func setUp() { machine = CLIMachine("polish") }
    override func tearDown() { machine = nil }

    func testAnUnknownSubcommandSuggestsTheNearestAtEveryLevel() throws {
        let cases: [(arguments: [String], expected: String)] = [
            (["persn"], "did you mean 'person'?"),
            (["person", "ad", "Ada"], "did you mean 'add'?"),
            (["--json", "mtach", "list"], "did you mean 'match'?"),
            (["match", "photo", "sav", "X", "--to", "f"], "did you mean 'save'?"),
            (["score", "delte", "X"], "did you mean 'delete'?"),
            (["xyzzy"], "see 'scorebook --help'"),
        ]
        for (arguments, expected) in cases {
            let message = try machine.refused(arguments, status: nil)
            XCTAssertTrue(message.contains(expected), "\(arguments): \(message)")
        }
        XCTAssertEqual(try machine.json("person", "list").arrayValue?.count, 0)
    }

    func testMatchListIsNewestFirst() throws {
        try machine.run("person", "add", "Ada")
        try machine.run("game", "add", "Go")
        var started: [String] = []
        for date in ["2024-03-01T10:00:00Z", "2024-05-01T10:00:00Z", "2024-01-01T10:00:00Z"] {
            started.append(try machine.create("match", "start", "--game", "Go", "--players", "Ada", "--date", date))
        }
        let newestFirst = [started[1], started[0], started[2]]
        XCTAssertEqual(try machine.json("match", "list").arrayValue?.compactMap { $0["recordName"]?.stringValue }, newestFirst)
        let table = try machine.run("match", "list").lines.dropFirst()
        XCTAssertEqual(table.compactMap { row in newestFirst.first { row.contains($0) } }, newestFirst)
    }

    /// A ZWJ family and a flag are one character each, two columns wide: the next column starts
    /// at the same place on every row.
    func testTablesAlignNamesMadeOfEmojiSequences() throws {
        let names = ["Ada", "👨‍👩‍👧‍👦", "🇫🇷 Zoe", "🏳️‍🌈", "👩🏽‍💻 Kim"]
        for (index, name) in names.enumerated() {
            try machine.run("person", "add", name, "--email", "p\(index)@example.com")
        }
        let rows = try machine.run("person", "list").lines.dropFirst()
        XCTAssertEqual(rows.count, names.count)
        var columns: Set<Int> = []
        for row in rows {
            let before = try XCTUnwrap(row.range(of: " p").map { String(row[..<$0.upperBound]) }, row)
            // Every character here but ASCII is an emoji cluster, two columns wide.
            columns.insert(before.reduce(0) { $0 + ($1.unicodeScalars.first!.isASCII ? 1 : 2) })
        }
        XCTAssertEqual(columns.count, 1, "the EMAIL column starts at one column: \(Array(rows))")
    }

    func testAFileThatIsNotAStoreIsOneLineAndLeftAsItIs() throws {
        let text = machine.directory.appendingPathComponent("notes.txt").path
        XCTAssertTrue(FileManager.default.createFile(atPath: text, contents: Data("shopping list\n".utf8)))
        let other = machine.directory.appendingPathComponent("other.sqlite").path
        do {
            let connection = try SQLiteConnection(path: other)
            try connection.execute("PRAGMA journal_mode=DELETE; CREATE TABLE recipes(name TEXT); INSERT INTO recipes VALUES ('soup')")
        }
        for path in [text, other] {
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            for arguments in [["person", "list"], ["person", "add", "Ada"]] {
                let result = try DaemonProcess.run("scorebook", ["--store", path] + arguments)
                XCTAssertEqual(result.status, 1, result.stderr)
                XCTAssertEqual(result.stderr, "error: \(path) is not a scorebook store; give another --store\n")
            }
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), before, "\(path) was not changed")
        }
    }

    /// Ctrl-C during a sync whose server does not answer: the progress line drawn on the terminal
    /// is erased, one line says what is left to send, and the process ends with 130.
    func testCtrlCErasesTheProgressLineAndExitsWith130() throws {
        let daemon = try DaemonProcess.start()
        defer { try? daemon.stop() }
        try machine.login(daemon, token: try daemon.createUser("ada"))
        try machine.run("person", "add", "Ada")
        let terminal = try PseudoTerminal()
        let process = Process()
        process.executableURL = DaemonProcess.binaryURL("scorebook")
        process.arguments = ["--store", machine.storePath, "sync"]
        process.environment = ProcessInfo.processInfo.environment.merging(["SCOREBOOK_PROGRESS_AFTER_MS": "0"]) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = terminal.replica
        sendSignal(daemon.processIdentifier, SIGSTOP)
        defer { sendSignal(daemon.processIdentifier, SIGCONT) }
        try process.run()
        defer { if process.isRunning { sendSignal(process.processIdentifier, SIGKILL) } }
        XCTAssertTrue(terminal.read(until: "syncing", timeout: 30).contains("syncing"), "the progress line was drawn")
        sendSignal(process.processIdentifier, SIGINT)
        XCTAssertTrue(DaemonProcess.waitForExit(process, timeout: 30))
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 130)
        let shown = terminal.read(until: "left to send", timeout: 10)
        XCTAssertTrue(shown.contains("\r\u{1B}[Kinterrupted: 1 change left to send; 'scorebook sync' sends it"),
                      "the line was erased, then what is left said: \(shown.debugDescription)")
    }
}
