import Foundation
@testable import Scorebook
import XCTest

/// The pieces behind what the CLI prints (issue 15), without a process: display widths, control
/// escapes, number rounding, name rules, token sources and REF precedence. The same behaviour
/// through the binary: `CLIOutputTests`.
final class DisplayTextTests: XCTestCase {
    func testDisplayWidthCountsWideCharactersEmojiAndZeroWidthMarks() {
        let cases: [(String, Int)] = [
            ("Catan", 5), ("カタン", 6), ("囲碁", 4), ("한국", 4), ("ＡＢ", 4), ("Cafe\u{301}", 4), ("🎲", 2), ("🎲 Dice", 7),
            ("👨‍👩‍👧", 2), ("🇫🇷", 2), ("❤️", 2), ("❤", 1), ("1️⃣", 2), ("👍🏽", 2), ("©", 1), ("½", 1), ("a\u{200B}b", 2), ("", 0),
        ]
        for (text, width) in cases {
            XCTAssertEqual(DisplayText.width(text), width, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    func testControlCharactersAreEscapedAndNothingElse() {
        XCTAssertEqual(DisplayText.escapingControls("Eve\u{1B}[2J\u{9B}\u{7F}\u{0}\n"), "Eve\\u{1B}[2J\\u{9B}\\u{7F}\\u{0}\\u{A}")
        XCTAssertEqual(DisplayText.escapingControls("a\nb\u{1B}", keepingNewlines: true), "a\nb\\u{1B}")
        XCTAssertEqual(DisplayText.escapingControls("カタン é \u{A0} \u{200D} \\u{1B}"), "カタン é \u{A0} \u{200D} \\u{1B}")
        XCTAssertEqual(TextTable(headers: ["A", "B"], rows: [["x\u{1B}", "y"], ["カ", "z"]]).rendered,
                       "A        B\nx\\u{1B}  y\nカ       z")
    }

    func testJSONTextEscapesDELAndC1AsWellAsC0() {
        XCTAssertEqual(JSONText.render(["k\u{7F}": .string("a\u{1B}b\u{9B}c\u{7F}\"\\")]),
                       #"{"k\u007f":"a\u001bb\u009bc\u007f\"\\"}"#)
    }

    func testNumbersLoseTheirBinaryNoise() {
        XCTAssertEqual(NumberText.format(0.1 + 0.2), "0.3")
        XCTAssertEqual(NumberText.format((0..<10).reduce(0.0) { total, _ in total + 0.1 }), "1")
        XCTAssertEqual(NumberText.format((0..<1000).reduce(0.0) { total, _ in total + 0.1 }), "100")
        XCTAssertEqual(NumberText.format(-3), "-3")
        XCTAssertEqual(NumberText.format(12.5), "12.5")
        XCTAssertEqual(NumberText.format(1.0 / 3.0), "0.333333333333")
        XCTAssertEqual(NumberText.format(123_456.789), "123456.789")
        XCTAssertEqual(NumberText.format(-0.0), "0")
        XCTAssertEqual(NumberText.rounded(0.1 + 0.2), 0.3)
        XCTAssertEqual(NumberText.rounded(0.1 + 0.2).description, "0.3")
        XCTAssertTrue(NumberText.rounded(.nan).isNaN)
        XCTAssertEqual(NumberText.rounded(.infinity), .infinity)
    }

    func testLocalTimeUsesTheZoneOffset() {
        XCTAssertEqual(LocalTime.offset(seconds: 19_800), "+05:30")
        XCTAssertEqual(LocalTime.offset(seconds: -14_400), "-04:00")
        XCTAssertEqual(LocalTime.offset(seconds: 0), "+00:00")
        XCTAssertNotNil(LocalTime.string(from: Date(timeIntervalSince1970: 0))
            .range(of: #"^19(69|70)-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} [+-][0-9]{2}:[0-9]{2}$"#, options: .regularExpression))
    }

    func testNamesAreOneTo200CharactersWithoutControls() throws {
        XCTAssertEqual(try NameValidation.validated("  Catan \u{3000}", field: "a game's name"), "Catan")
        XCTAssertEqual(try NameValidation.validated(String(repeating: "👨‍👩‍👧", count: 200), field: "x").count, 200,
                       "characters are what a reader counts")
        for bad in ["", "   ", String(repeating: "x", count: 201), "a\u{1B}", "a\tb", "a\nb", "a\u{85}", "a\u{7F}", "a\u{2028}b"] {
            XCTAssertThrowsError(try NameValidation.validated(bad, field: "a name"), bad.debugDescription) { error in
                XCTAssertEqual((error as? ScorebookError)?.kind, .invalidInput)
                XCTAssertTrue((error as? ScorebookError)?.description.hasPrefix("a name ") ?? false, "\(error)")
            }
        }
        XCTAssertNil(try NameValidation.validatedOptional("  ", field: "x"))
        XCTAssertNil(try NameValidation.validatedOptional(nil, field: "x"))
        XCTAssertThrowsError(try NameValidation.validatedOptional("a\u{1B}", field: "x"))
    }

    func testTheTokenComesFromExactlyOneSource() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data("  abc123\n".utf8).write(to: file)
        XCTAssertEqual(try TokenSource.token(flag: "t", file: nil, environment: nil), "t")
        XCTAssertEqual(try TokenSource.token(flag: nil, file: file.path, environment: nil), "abc123")
        XCTAssertEqual(try TokenSource.token(flag: nil, file: nil, environment: "e"), "e")
        XCTAssertEqual(try TokenSource.token(flag: "t", file: nil, environment: ""), "t", "an empty variable is unset")
        for (flag, path, environment) in [("t", file.path, nil), ("t", nil, "e"), (nil, file.path, "e"), (nil, nil, nil), ("", nil, nil),
                                          ("a b", nil, nil), (nil, file.path + "-missing", nil)] as [(String?, String?, String?)] {
            XCTAssertThrowsError(try TokenSource.token(flag: flag, file: path, environment: environment))
        }
    }

    func testAWholeDisplayNameWinsOverAFirstName() {
        let candidates = [
            ReferenceResolver.Candidate(recordName: "Person|~|A1", names: ["Ada", "Ada Lovelace"], displayName: "Ada Lovelace"),
            ReferenceResolver.Candidate(recordName: "Person|~|A2", names: ["Ada", "Ada"], displayName: "Ada"),
            ReferenceResolver.Candidate(recordName: "Player|~|P1", names: [], displayName: "seat 1"),
        ]
        XCTAssertEqual(ReferenceResolver.resolve("ada", among: candidates), .found("Person|~|A2"))
        XCTAssertEqual(ReferenceResolver.resolve("Ada Lovelace", among: candidates), .found("Person|~|A1"))
        XCTAssertEqual(ReferenceResolver.resolve("seat 1", among: candidates), .notFound, "a display name that is no name is no REF")
    }
}
