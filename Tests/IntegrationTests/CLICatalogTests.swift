import Foundation
import RecordModel
import XCTest

/// The public game catalogue through the real binaries (issue 14): a club publishes its games
/// once with `scorebook catalog publish`, and another user's machine lists them and adds one with
/// `scorebook game add --from-catalog`, all through the public database of a real `scorebookd`.
final class CLICatalogTests: XCTestCase {
    var daemon: DaemonProcess!

    override func setUpWithError() throws {
        daemon = try DaemonProcess.start()
    }

    override func tearDownWithError() throws {
        try daemon?.stop()
        daemon = nil
    }

    func testAClubPublishesOnceAndAnotherUserAddsFromTheCatalogue() throws {
        let club = CLIMachine("club"), member = CLIMachine("member")
        try club.login(daemon, token: try daemon.createUser("club"))
        try member.login(daemon, token: try daemon.createUser("member"))
        try club.run("game", "add", "Golf", "--low-score-wins")
        try club.run("game", "add", "Catan")

        let golf = try club.json("catalog", "publish", "Golf", "--description", "Nine holes on paper")
        XCTAssertEqual(golf["name"]?.stringValue, "Golf")
        XCTAssertEqual(golf["lowScoreWins"]?.boolValue, true)
        XCTAssertTrue(golf["recordName"]?.stringValue?.hasPrefix("CatalogGame|~|") ?? false)
        let firstName = try club.create("catalog", "publish", "Catan", "--description", "Trade and build")
        XCTAssertEqual(try club.create("catalog", "publish", "Catan", "--description", "Trade, build, settle"), firstName,
                       "publishing again changes the same entry")

        let listed = try member.json("catalog", "list").arrayValue ?? []
        XCTAssertEqual(listed.compactMap { $0["name"]?.stringValue }, ["Catan", "Golf"])
        XCTAssertEqual(listed.first?["description"]?.stringValue, "Trade, build, settle")
        let text = try member.run("catalog", "list").stdout
        XCTAssertTrue(text.contains("Nine holes on paper") && text.contains("low score wins"), text)

        let added = try member.json("game", "add", "--from-catalog", "golf")
        XCTAssertEqual(added["name"]?.stringValue, "Golf", "the catalogue's spelling, whatever case was asked for")
        XCTAssertEqual(added["lowScoreWins"]?.boolValue, true)
        let games = try member.json("game", "list").arrayValue ?? []
        XCTAssertEqual(games.compactMap { $0["name"]?.stringValue }, ["Golf"])
        // The same game from the catalogue again is refused, naming the one there; --allow-duplicate insists.
        let again = try member.refused(["game", "add", "--from-catalog", "Golf"])
        XCTAssertTrue(again.contains("\"Golf\" already exists") && again.contains("--allow-duplicate"), again)
        let second = try member.json("game", "add", "--from-catalog", "Golf", "--allow-duplicate")["recordName"]?.stringValue
        try member.run("game", "delete", try XCTUnwrap(second))

        // The member cannot change the club's entry; a name not in the catalogue is one line, exit 2.
        try member.run("game", "add", "Catan")
        let refused = try member.run(["catalog", "publish", "Catan", "--description", "mine"], allowFailure: true)
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("another user"), refused.stderr)
        XCTAssertEqual((try member.json("catalog", "list").arrayValue ?? []).first?["description"]?.stringValue, "Trade, build, settle")
        let missing = try member.run(["game", "add", "--from-catalog", "Chess"], allowFailure: true)
        XCTAssertEqual(missing.status, 2)
        XCTAssertEqual(missing.stderr.split(separator: "\n").count, 1, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("Chess"), missing.stderr)
    }

    func testTheCatalogueNeedsALoginAndGameAddNeedsANameOrACatalogueName() throws {
        let offline = CLIMachine("offline")
        let listed = try offline.run(["catalog", "list"], allowFailure: true)
        XCTAssertEqual(listed.status, 1)
        XCTAssertTrue(listed.stderr.contains("not logged in"), listed.stderr)
        XCTAssertEqual(listed.stderr.split(separator: "\n").count, 1, listed.stderr)
        let neither = try offline.run(["game", "add"], allowFailure: true)
        XCTAssertNotEqual(neither.status, 0)
        let both = try offline.run(["game", "add", "Go", "--from-catalog", "Go"], allowFailure: true)
        XCTAssertNotEqual(both.status, 0)
        XCTAssertTrue(try offline.json("game", "list").arrayValue?.isEmpty ?? false)
    }

    /// The list names each publisher, a publisher unpublishes their own entry, and the
    /// administrator removes anyone's with `scorebookd catalog remove`.
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
