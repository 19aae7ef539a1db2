import Foundation
import RecordModel
import XCTest

/// Sharing says what happened, people show by name, invitations are announced once, and a
/// book is renamed, or deleted for others only when the owner says so.
final class CLISharingFeedbackTests: SharedBookTestCase {
    func testShareToAnUnknownAddressSaysTheInvitationWaitsAndUnshareSaysWhom() throws {
        let alice = try user("alice"), bob = try user("bob")
        _ = try shareFriday(from: alice, to: bob)

        let typo = try alice.run("book", "share", "friday", "--with", "bob@exmaple.com")
        XCTAssertTrue(typo.stdout.contains("/share/"), typo.stdout)
        XCTAssertTrue(typo.stderr.contains("no user has bob@exmaple.com yet; the invitation waits for them"), typo.stderr)
        let known = try alice.run("book", "share", "friday", "--with", "bob@example.com")
        XCTAssertFalse(known.stderr.contains("no user has"), known.stderr)

        let unshared = try alice.run("book", "unshare", "friday", "--with", "bob@example.com")
        XCTAssertEqual(unshared.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "bob is no longer in friday")

        // Bob hears who took it, and no longer that it "was deleted on the server".
        let lost = try bob.run("sync").stdout
        XCTAssertTrue(lost.contains("you no longer have the book friday from alice: alice deleted it, stopped sharing it or removed you"), lost)
        XCTAssertFalse(lost.contains("was deleted on the server"), lost)
    }

    func testPeopleShowByNameAndNameTheOwnerOfABook() throws {
        let alice = try user("alice"), bob = try user("bob")
        let relogin = try alice.run("account", "login", "--server", daemon.baseURL.absoluteString, "--token", tokens["alice"]!)
        XCTAssertTrue(relogin.stdout.hasPrefix("logged in as alice <alice@example.com> at "), relogin.stdout)
        let aliceID = try XCTUnwrap(userRecordNames["alice"])
        XCTAssertEqual(try alice.json("account", "status")["userRecordName"]?.stringValue, aliceID, "JSON keeps the id")

        _ = try shareFriday(from: alice, to: bob)
        let list = try bob.run("book", "list").stdout
        let friday = try XCTUnwrap(list.split(separator: "\n").first { $0.hasPrefix("friday") }, list)
        XCTAssertTrue(friday.contains("alice <alice@example.com>"), list)
        XCTAssertFalse(friday.contains(aliceID), list)
        XCTAssertEqual(try bob.json("book", "list").arrayValue?.first { $0["name"]?.stringValue == "friday" }?["owner"]?.stringValue, aliceID)

        // NAME@OWNER by the owner's email or name, as well as the user record name.
        for owner in ["alice@example.com", "alice", aliceID] {
            XCTAssertEqual(try bob.json("--book", "friday@\(owner)", "game", "list").arrayValue?.first?["name"]?.stringValue, "Catan", owner)
        }
        XCTAssertNotEqual(try bob.run(["--book", "friday@carol", "game", "list"], allowFailure: true).status, 0)

        // Renamed by its owner: the participant's book takes the new title at the next sync.
        XCTAssertEqual(try alice.run("book", "rename", "friday", "Friday games").stdout, "renamed book friday to \"Friday games\"\n")
        try bob.sync()
        let renamed = try XCTUnwrap(try bob.json("book", "list").arrayValue?.first { $0["zoneName"]?.stringValue == "friday" })
        XCTAssertEqual(renamed["name"]?.stringValue, "Friday games")
        XCTAssertEqual(try bob.json("--book", "Friday games", "game", "list").arrayValue?.count, 1)
    }

    func testSyncAnnouncesEachNewInvitationOnceWithACommandForTheShell() throws {
        let alice = try user("alice"), bob = try user("bob")
        try alice.run("book", "create", "friday")
        try alice.sync()
        try alice.run("book", "rename", "friday", "Friday games")
        try alice.run("book", "share", "friday", "--with", "bob@example.com")

        let first = try bob.run("sync").stdout
        XCTAssertTrue(first.contains("invitation: \"Friday games\" from alice — scorebook book accept 'Friday games'"), first)
        let again = try bob.run("sync").stdout
        XCTAssertFalse(again.contains("invitation:"), again)

        // Another one later is announced once too, in JSON as well.
        try alice.run("book", "create", "sunday")
        try alice.sync()
        try alice.run("book", "share", "sunday", "--with", "bob@example.com")
        let json = try bob.json("sync")
        XCTAssertEqual(json["invitations"]?.arrayValue?.count, 1, json.serializedString())
        XCTAssertTrue(json["invitations"]?.arrayValue?.first?.stringValue?.hasSuffix("scorebook book accept sunday") ?? false)
        XCTAssertEqual(try bob.json("sync")["invitations"]?.arrayValue?.count, 0)

        // The title the owner gave is what the participant's book list shows; the zone name stays.
        try bob.run("book", "accept", "Friday games")
        try bob.sync()
        let books = try bob.json("book", "list").arrayValue ?? []
        let shared = try XCTUnwrap(books.first { $0["zoneName"]?.stringValue == "friday" })
        XCTAssertEqual(shared["name"]?.stringValue, "Friday games")
        let own = try XCTUnwrap(try alice.json("book", "list").arrayValue?.first { $0["zoneName"]?.stringValue == "friday" })
        XCTAssertEqual(own["name"]?.stringValue, "Friday games")
    }

    func testDeletingABookOthersAcceptedNeedsYesAndABookNobodyAcceptedDoesNot() throws {
        let alice = try user("alice"), bob = try user("bob")
        _ = try shareFriday(from: alice, to: bob)

        let refused = try alice.run(["book", "delete", "friday"], allowFailure: true)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("bob"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("--yes"), refused.stderr)
        XCTAssertTrue(try alice.json("book", "list").arrayValue?.contains { $0["name"]?.stringValue == "friday" } ?? false,
                      "nothing changed")

        try alice.run("book", "delete", "friday", "--yes")
        XCTAssertFalse(try alice.json("book", "list").arrayValue?.contains { $0["name"]?.stringValue == "friday" } ?? true)

        // Shared but not accepted, or never shared: no question.
        try alice.run("book", "create", "solo")
        try alice.sync()
        try alice.run("book", "share", "solo", "--with", "bob@example.com")
        try alice.run("book", "delete", "solo")
        try alice.run("book", "create", "scratch")
        try alice.run("book", "delete", "scratch")
    }

    func testDeletingABookOthersAcceptedAsksOnATerminal() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            throw XCTSkip("script(1) is needed to give the CLI a terminal")
        }
        let alice = try user("alice"), bob = try user("bob")
        _ = try shareFriday(from: alice, to: bob)

        let declined = try deleteOnATerminal("friday", on: alice, answering: "n")
        XCTAssertEqual(declined.status, 1, declined.output)
        XCTAssertTrue(declined.output.contains("deleting friday also deletes it for bob <bob@example.com>"), declined.output)
        XCTAssertTrue(try alice.json("book", "list").arrayValue?.contains { $0["name"]?.stringValue == "friday" } ?? false)

        let confirmed = try deleteOnATerminal("friday", on: alice, answering: "y")
        XCTAssertEqual(confirmed.status, 0, confirmed.output)
        XCTAssertFalse(try alice.json("book", "list").arrayValue?.contains { $0["name"]?.stringValue == "friday" } ?? true)
    }

    /// `book delete NAME` with a terminal as standard input (through script(1)), answering the
    /// question once it is asked.
    func deleteOnATerminal(_ name: String, on machine: CLIMachine, answering answer: String) throws -> (status: Int32, output: String) {
        let command = [DaemonProcess.binaryURL("scorebook").path, "--store", machine.storePath, "book", "delete", name]
            .map { "'" + $0 + "'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qec", command, "/dev/null"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let collected = PipeCollector(output.fileHandleForReading)
        defer { if process.isRunning { process.terminate() } }
        XCTAssertTrue(eventually { collected.text.contains("[y/N]") }, collected.text)
        input.fileHandleForWriting.write(Data((answer + "\n").utf8))
        XCTAssertTrue(DaemonProcess.waitForExit(process, timeout: 20), collected.text)
        input.fileHandleForWriting.closeFile()
        _ = collected.waitForEOF(timeout: 5)
        return (process.terminationStatus, collected.text)
    }
}
