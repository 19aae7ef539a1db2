import Foundation
import RecordModel
import XCTest

/// `sync` names each conflict it settled, and scores for one player and round entered on two
/// machines are reported when they meet.
final class CLIConflictReportTests: SharedBookTestCase {
    func testSyncNamesTheConflictItSettled() throws {
        let alice = try user("alice"), bob = try user("bob")
        let match = try shareFriday(from: alice, to: bob)
        let score = try alice.create("--book", "friday", "score", "add", "--match", match, "--player", "Ada", "--round", "2", "5")
        try alice.sync()
        try bob.sync()

        // Alice makes it 8, then bob (later, so his edit wins) makes it 7 and syncs first.
        try alice.run("--book", "friday", "score", "edit", score, "8")
        Thread.sleep(forTimeInterval: 0.05)
        try bob.run("--book", "friday", "score", "edit", score, "7")
        try bob.sync()
        let text = try alice.run("sync").stdout
        XCTAssertTrue(text.contains("Score \"Ada, round 2\": kept 7 from bob, yours was 8"), text)
        XCTAssertFalse(text.contains("1 conflicts"), text)

        // JSON: the count and the details, by the user record name.
        try alice.run("--book", "friday", "score", "edit", score, "3")
        Thread.sleep(forTimeInterval: 0.05)
        try bob.run("--book", "friday", "score", "edit", score, "4")
        try bob.sync()
        let json = try alice.json("sync")
        XCTAssertEqual(json["conflicts"]?.int64Value, 1, json.serializedString())
        let detail = try XCTUnwrap(json["conflictDetails"]?.arrayValue?.first, json.serializedString())
        XCTAssertEqual(detail["recordName"]?.stringValue, score)
        XCTAssertEqual(detail["field"]?.stringValue, "value")
        XCTAssertEqual(detail["kept"]?.doubleValue, 4)
        XCTAssertEqual(detail["lost"]?.doubleValue, 3)
        XCTAssertEqual(detail["by"]?.stringValue, userRecordNames["bob"])
    }

    func testTwoScoresForOnePlayerAndRoundAreReportedWhenTheyMeet() throws {
        let alice = try user("alice"), bob = try user("bob")
        let match = try shareFriday(from: alice, to: bob)
        try alice.run("--book", "friday", "score", "add", "--match", match, "--player", "Ada", "--round", "2", "8")
        try bob.run("--book", "friday", "score", "add", "--match", match, "--player", "Ada", "--round", "2", "7")
        let bobSync = try bob.run("sync").stdout
        XCTAssertFalse(bobSync.contains("entered twice"), bobSync)
        let text = try alice.run("sync").stdout
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.contains("entered twice") }, text)
        XCTAssertTrue(line.hasPrefix("Score \"Ada, round 2\" was entered twice: "), text)
        XCTAssertTrue(line.contains("7 by bob"), text)
        XCTAssertTrue(line.contains("8 by you"), text)
        XCTAssertEqual(try bob.json("sync")["duplicateScores"]?.arrayValue?.count, 1, "bob hears of it when alice's reaches him")
    }
}
