import Foundation
import RecordModel
import XCTest

/// Issue 45, the daemon's side: a backup to a directory that is not there, a mistyped
/// subcommand, and the lines that say what started, on what, and that it stopped.
final class DaemonRoundTwoTests: XCTestCase {
    func testABackupIntoAMissingDirectoryIsOnePlainLine() throws {
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "scorebookd-backup")
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try DaemonProcess.start(dataDirectory: directory)
        try daemon.stop()
        let result = try DaemonProcess.run("scorebookd", ["backup", "--to", "/nonexistent/dir/b.sqlite", "--data-dir", directory.path])
        XCTAssertEqual(result.status, 1, result.stderr)
        assertOneLine(result.stderr, "backup to a missing directory")
        XCTAssertEqual(result.stderr, "scorebookd: cannot write the backup to /nonexistent/dir/b.sqlite: there is no directory /nonexistent/dir\n")
        XCTAssertEqual(result.stdout, "")

        let written = directory.appendingPathComponent("b.sqlite").path
        XCTAssertEqual(try DaemonProcess.run("scorebookd", ["backup", "--to", written, "--data-dir", directory.path]).status, 0)
        let again = try DaemonProcess.run("scorebookd", ["backup", "--to", written, "--data-dir", directory.path])
        XCTAssertEqual(again.stderr, "scorebookd: cannot write the backup to \(written): the file exists already\n")
    }

    func testAMistypedSubcommandSuggestsTheNearest() throws {
        let cases: [(arguments: [String], expected: String)] = [
            (["user", "lst"], "unknown command 'lst' for 'scorebookd user'; did you mean 'list'?"),
            (["usr", "list"], "did you mean 'user'?"),
            (["bakup", "--to", "x"], "did you mean 'backup'?"),
            (["xyzzy"], "see 'scorebookd --help'"),
        ]
        for (arguments, expected) in cases {
            let result = try DaemonProcess.run("scorebookd", arguments)
            XCTAssertNotEqual(result.status, 0, "\(arguments)")
            assertOneLine(result.stderr, arguments.joined(separator: " "))
            XCTAssertTrue(result.stderr.contains(expected), "\(arguments): \(result.stderr)")
        }
    }

    func testTheDaemonSaysItsVersionAndStoreAtStartAndThatItStopped() throws {
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "scorebookd-lines")
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try DaemonProcess.start(dataDirectory: directory)
        // The ready line stays exactly what clients wait for.
        XCTAssertNotNil(DaemonProcess.parseReadinessLine(daemon.standardOutputText.split(separator: "\n").first.map(String.init) ?? ""))
        let startLine = "scorebookd \(ProductVersion.current) started"
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, !daemon.standardErrorText.contains(startLine) { Thread.sleep(forTimeInterval: 0.1) }
        let start = daemon.standardErrorText.split(separator: "\n").first { $0.hasPrefix(startLine) }.map(String.init) ?? ""
        XCTAssertTrue(start.hasPrefix("scorebookd \(ProductVersion.current) started (pid \(daemon.processIdentifier))"), daemon.standardErrorText)
        XCTAssertTrue(start.contains(directory.appendingPathComponent("scorebook.sqlite").path) || start.contains(directory.path), start)
        try daemon.stop()
        let stopped = Date().addingTimeInterval(5)
        while Date() < stopped, !daemon.standardErrorText.contains("scorebookd \(ProductVersion.current) stopped") { Thread.sleep(forTimeInterval: 0.1) }
        XCTAssertTrue(daemon.standardErrorText.contains("scorebookd \(ProductVersion.current) stopped (pid \(daemon.processIdentifier))"),
                      daemon.standardErrorText)
        XCTAssertEqual(daemon.standardOutputText.split(separator: "\n").count, 1, "standard output holds the ready line only")
    }
}
