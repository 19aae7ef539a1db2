import Foundation
import RecordModel
import XCTest

/// Issue 45, the catalogue: its list names each publisher, a publisher unpublishes their own
/// entry, and the administrator removes anyone's with `scorebookd catalog remove`.
final class CLIRoundTwoCatalogTests: XCTestCase {
    var daemon: DaemonProcess!

    override func setUpWithError() throws {
        daemon = try DaemonProcess.start()
    }

    override func tearDownWithError() throws {
        try daemon?.stop()
        daemon = nil
    }

    func testThePublisherUnpublishesTheListNamesThemAndTheAdministratorRemovesAnyEntry() throws {
        let club = CLIMachine("club"), member = CLIMachine("member")
        try club.login(daemon, token: try daemon.createUser("club"))
        try member.login(daemon, token: try daemon.createUser("member"))
        try club.run("game", "add", "Golf", "--low-score-wins")
        try club.run("game", "add", "Catan")
        try club.run("catalog", "publish", "Golf", "--description", "Nine holes on paper")
        try club.run("catalog", "publish", "Catan")

        let text = try member.run("catalog", "list").stdout
        XCTAssertTrue(text.split(separator: "\n").first?.contains("PUBLISHER") ?? false, text)
        let golfRow = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("Golf") }, text)
        XCTAssertTrue(golfRow.contains("club"), text)
        XCTAssertFalse(golfRow.contains("_"), "a name, not a user record name: \(text)")

        // Only the publisher unpublishes; games added from it stay.
        try member.run("game", "add", "--from-catalog", "Golf")
        let refused = try member.refused(["catalog", "unpublish", "Golf"])
        XCTAssertTrue(refused.contains("club published \"Golf\""), refused)
        XCTAssertEqual(try club.run("catalog", "unpublish", "golf").stdout, "unpublished \"Golf\" from the catalogue\n")
        XCTAssertEqual(try member.json("catalog", "list").arrayValue?.compactMap { $0["name"]?.stringValue }, ["Catan"])
        XCTAssertEqual(try member.json("game", "list").arrayValue?.compactMap { $0["name"]?.stringValue }, ["Golf"])
        let gone = try club.refused(["catalog", "unpublish", "Golf"], status: 2)
        XCTAssertTrue(gone.contains("no game named \"Golf\" in the catalogue"), gone)

        // The administrator removes the club's entry.
        let removed = try DaemonProcess.run("scorebookd", ["catalog", "remove", "catan"] + daemon.storeArguments)
        XCTAssertEqual(removed.status, 0, removed.stderr)
        let answer = try JSONValue.parse(removed.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(answer["name"]?.stringValue, "Catan")
        XCTAssertEqual(try member.json("catalog", "list").arrayValue?.count, 0)
        let again = try DaemonProcess.run("scorebookd", ["catalog", "remove", "Catan"] + daemon.storeArguments)
        XCTAssertEqual(again.status, 1)
        assertOneLine(again.stderr, "removing an entry twice")
        XCTAssertTrue(again.stderr.contains("no game named \"Catan\" in the catalogue"), again.stderr)
    }
}
