import Scorebook
import XCTest

/// The commands the CLI prints for a person to run read back, in a POSIX shell, as the words
/// they were made of.
final class ShellQuotingTests: XCTestCase {
    func testWordsAreQuotedOnlyWhereAShellWouldReadThemOtherwise() {
        XCTAssertEqual(ShellCommand.line(["scorebook", "score", "edit", "Score|~|9B1D-2C", "7"]), "scorebook score edit 'Score|~|9B1D-2C' 7")
        XCTAssertEqual(ShellCommand.quoted("Ada Lovelace"), "'Ada Lovelace'")
        XCTAssertEqual(ShellCommand.quoted("O'Brien"), "'O'\\''Brien'")
        XCTAssertEqual(ShellCommand.quoted(""), "''")
        XCTAssertEqual(ShellCommand.quoted("$HOME*`x`"), "'$HOME*`x`'")
        XCTAssertEqual(ShellCommand.quoted("--round=-1,2.5/a:b@c%d+e"), "--round=-1,2.5/a:b@c%d+e")
    }

    /// Each quoted line, run through /bin/sh, prints its words back unchanged.
    func testAShellReadsTheWordsBack() throws {
        let words = ["plain", "Match|~|9B1D", "it's", "a b", "", "$(reboot)", "tab\there", "Zoé 🇫🇷", "\\back"]
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "printf '%s\\n' " + ShellCommand.line(words)]
        let output = Pipe()
        shell.standardOutput = output
        try shell.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        shell.waitUntilExit()
        XCTAssertEqual(printed, words.map { $0 + "\n" }.joined())
    }
}
