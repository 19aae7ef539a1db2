import Foundation
import RecordModel
import XCTest

/// Issue 45 with a server: people by name where record names showed, books of the same name,
/// sharing by name and with everyone, a read-only book's hint, and a console URL given for
/// the server's, through the real binaries.
final class CLIRoundTwoSharingTests: SharedBookTestCase {
    func testScoreListStatusAndTheWrongAccountNameThePersonNotTheRecordName() throws {
        let alice = try user("alice")
        let aliceID = try XCTUnwrap(userRecordNames["alice"])
        try alice.run("person", "add", "Ada")
        try alice.run("game", "add", "Go")
        let match = try alice.create("match", "start", "--game", "Go", "--players", "Ada")
        try alice.run("score", "add", "--match", match, "--player", "Ada", "7")
        try alice.sync()

        // One's own book, never shared: ENTERED BY by name; JSON keeps the record name.
        let table = try alice.run("score", "list", "--match", match).stdout
        XCTAssertTrue(table.contains("alice"), table)
        XCTAssertFalse(table.contains(aliceID), table)
        XCTAssertEqual(try alice.json("score", "list", "--match", match).arrayValue?.first?["enteredBy"]?.stringValue, aliceID)

        try alice.run("account", "logout")
        let status = try alice.run("status").stdout
        XCTAssertTrue(status.contains("the local data belongs to alice <alice@example.com>"), status)
        XCTAssertFalse(status.contains(aliceID), status)

        let bob = try daemon.createUserInfo("bob", email: "bob@example.com")
        let refused = try alice.run(["account", "login", "--server", daemon.baseURL.absoluteString, "--token", bob.token],
                                    allowFailure: true)
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("alice <alice@example.com>"), refused.stderr)
        XCTAssertFalse(refused.stderr.contains(aliceID), refused.stderr)
    }

    func testTheConsoleAddressGivenForTheServerIsNamedForWhatItIs() throws {
        let info = try daemon.createUserInfo("alice", email: "alice@example.com")
        let machine = CLIMachine("alice")
        let console = daemon.baseURL.appendingPathComponent("console").absoluteString
        let result = try machine.run(["account", "login", "--server", console, "--token", info.token], allowFailure: true)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("\(console) is not the server's root URL; try --server \(daemon.baseURL.absoluteString)"),
                      result.stderr)
        XCTAssertFalse(result.stderr.contains("NOT_FOUND"), result.stderr)
        try machine.login(daemon, token: info.token)
    }

    func testTwoBooksOfOneNameAreNeverPickedSilently() throws {
        let alice = try user("alice"), bob = try user("bob")
        _ = try shareFriday(from: alice, to: bob)

        let created = try bob.run("book", "create", "friday")
        XCTAssertEqual(created.stdout, "created book friday\n")
        XCTAssertTrue(created.stderr.contains("friday@alice is here too"), created.stderr)

        let ambiguous = try bob.refused(["--book", "friday", "game", "list"], status: 2)
        XCTAssertTrue(ambiguous.contains("friday@me") && ambiguous.contains("friday@alice"), ambiguous)
        XCTAssertEqual(try bob.json("--book", "friday@alice", "game", "list").arrayValue?.compactMap { $0["name"]?.stringValue }, ["Catan"])
        XCTAssertEqual(try bob.json("--book", "friday@me", "game", "list").arrayValue?.count, 0)
        // Deleting can only mean one's own.
        try bob.run("book", "delete", "friday@me")
        XCTAssertEqual(try bob.json("--book", "friday", "game", "list").arrayValue?.count, 1)
    }

    func testSharingSaysWithWhomUnsharesByNameOrEveryoneAndParticipantsSeeEachOther() throws {
        let alice = try user("alice"), bob = try user("bob"), carol = try user("carol")
        _ = try shareFriday(from: alice, to: bob)
        let shared = try alice.run("book", "share", "friday", "--with", "carol@example.com", "--read-only")
        XCTAssertTrue(shared.stdout.contains("/share/"), shared.stdout)
        XCTAssertEqual(shared.stdout.split(separator: "\n").count, 1, "the URL stays the only output")
        XCTAssertTrue(shared.stderr.contains("shared friday with carol (read-only)"), shared.stderr)
        // Sharing again with bob keeps him, and says so the same way.
        let reshared = try alice.run("book", "share", "friday", "--with", "bob@example.com")
        XCTAssertEqual(reshared.stderr, "shared friday with bob (read-write)\n")
        try carol.run("book", "accept", "friday")
        try carol.sync()

        // A participant sees who else is in the book.
        let seen = try bob.json("book", "participants", "friday").arrayValue ?? []
        XCTAssertEqual(Set(seen.compactMap { $0["emailAddress"]?.stringValue }),
                       ["alice@example.com", "bob@example.com", "carol@example.com"])
        XCTAssertTrue(try bob.run("book", "participants", "friday").stdout.contains("carol"))

        // By the name `book participants` shows.
        XCTAssertEqual(try alice.run("book", "unshare", "friday", "--with", "bob").stdout, "bob is no longer in friday\n")
        let left = try alice.json("book", "participants", "friday").arrayValue ?? []
        XCTAssertFalse(left.contains { $0["emailAddress"]?.stringValue == "bob@example.com" }, "\(left)")

        // Everyone at once.
        XCTAssertEqual(try alice.run("book", "unshare", "friday", "--everyone").stdout, "carol is no longer in friday\n")
        let none = try alice.json("book", "participants", "friday").arrayValue ?? []
        XCTAssertEqual(none.filter { $0["type"]?.stringValue != "OWNER" }.count, 0, "\(none)")
        let again = try alice.refused(["book", "unshare", "friday", "--everyone"])
        XCTAssertTrue(again.contains("not shared with anyone"), again)
        XCTAssertNotEqual(try alice.run(["book", "unshare", "friday"], allowFailure: true).status, 0, "--with or --everyone")
    }

    func testAFinishedMatchInAReadOnlyBookDoesNotSuggestReopening() throws {
        let alice = try user("alice"), bob = try user("bob")
        try alice.run("book", "create", "friday")
        try alice.run("--book", "friday", "person", "add", "Ada")
        try alice.run("--book", "friday", "game", "add", "Catan")
        let match = try alice.create("--book", "friday", "match", "start", "--game", "Catan", "--players", "Ada")
        try alice.run("--book", "friday", "match", "finish", match)
        try alice.sync()
        try alice.run("book", "share", "friday", "--with", "bob@example.com", "--read-only")
        try bob.run("book", "accept", "friday")
        try bob.sync()

        let message = try bob.refused(["--book", "friday", "score", "add", "--match", match, "--player", "Ada", "3"])
        XCTAssertTrue(message.contains("read-only"), message)
        XCTAssertFalse(message.contains("reopen"), message)
    }

    func testTheRoundsTableMarksARoundEnteredTwice() throws {
        let laptop = try user("alice")
        let phone = CLIMachine("alice-phone")
        try phone.login(daemon, token: try XCTUnwrap(tokens["alice"]))
        try laptop.run("person", "add", "Ada")
        try laptop.run("game", "add", "Go")
        let match = try laptop.create("match", "start", "--game", "Go", "--players", "Ada")
        try laptop.run("score", "add", "--match", match, "--player", "Ada", "--round", "1", "3")
        try laptop.sync()
        try phone.sync()
        // Both enter round 2 before either has the other's.
        try laptop.run("score", "add", "--match", match, "--player", "Ada", "--round", "2", "5")
        try phone.run("score", "add", "--match", match, "--player", "Ada", "--round", "2", "7")
        try laptop.sync()
        try phone.sync()
        try laptop.sync()

        let table = try laptop.run("match", "show", match, "--rounds").stdout
        let round2 = try XCTUnwrap(table.split(separator: "\n").first { $0.hasPrefix("2 ") }, table)
        XCTAssertTrue(round2.contains("12 (×2)"), table)
        let round1 = try XCTUnwrap(table.split(separator: "\n").first { $0.hasPrefix("1 ") }, table)
        XCTAssertFalse(round1.contains("×"), table)
        XCTAssertTrue(table.contains("two scores in one round"), table)
        let rounds = try laptop.json("match", "show", match, "--rounds")["rounds"]?.arrayValue ?? []
        XCTAssertEqual(rounds.first { $0["round"]?.int64Value == 2 }?["enteredTwice"]?.arrayValue?.count, 1)
        XCTAssertNil(rounds.first { $0["round"]?.int64Value == 1 }?["enteredTwice"])
    }
}
