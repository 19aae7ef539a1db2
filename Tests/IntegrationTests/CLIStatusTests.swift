import Foundation
import RecordModel
import XCTest

/// `status` counts the unsent changes of every book of the store, and names each book's share.
final class CLIStatusTests: SharedBookTestCase {
    func testStatusCountsTheUnsentScoresOfASharedBook() throws {
        let alice = try user("alice"), bob = try user("bob")
        let match = try shareFriday(from: alice, to: bob)
        try bob.run("--book", "friday", "score", "add", "--match", match, "--player", "Ada", "12")
        try bob.run("--book", "friday", "score", "add", "--match", match, "--player", "Bo", "9")

        let text = try bob.run("status").stdout
        XCTAssertTrue(text.contains("pending changes: 2"), text)
        XCTAssertTrue(text.contains("friday: 2 pending"), text)
        XCTAssertTrue(text.contains("ScorebookData: 0 pending"), text)

        let json = try bob.json("status")
        XCTAssertEqual(json["pending"]?.int64Value, 2)
        let books = json["books"]?.arrayValue ?? []
        XCTAssertEqual(books.first { $0["name"]?.stringValue == "friday" }?["pending"]?.int64Value, 2, json.serializedString())
        XCTAssertEqual(books.first { $0["name"]?.stringValue == "ScorebookData" }?["pending"]?.int64Value, 0)
        XCTAssertEqual(books.first { $0["name"]?.stringValue == "friday" }?["lastError"], .null)

        // Sent: nothing waits anywhere.
        try bob.sync()
        XCTAssertEqual(try bob.json("status")["pending"]?.int64Value, 0)
    }

    func testStatusNamesTheBookWhoseSyncFailed() throws {
        let alice = try user("alice"), bob = try user("bob")
        let match = try shareFriday(from: alice, to: bob)
        try bob.run("--book", "friday", "score", "add", "--match", match, "--player", "Ada", "12")
        try daemon.stop()
        XCTAssertNotEqual(try bob.run(["sync"], allowFailure: true).status, 0)
        let json = try bob.json("status")
        XCTAssertEqual(json["pending"]?.int64Value, 1)
        XCTAssertNotEqual(json["lastError"], .null, json.serializedString())
    }
}
