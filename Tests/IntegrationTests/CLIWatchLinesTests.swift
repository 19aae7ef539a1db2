import Foundation
import RecordModel
import XCTest

/// `sync --watch` as a person reads it: a start line, a line per change naming the score's
/// player, game and round and who made it, lines when the connection drops and comes back,
/// a summary at the end of `--for`, and a refused token that ends it.
final class CLIWatchLinesTests: SharedBookTestCase {
    var retired: [DaemonProcess] = []

    func testWatchLinesNameThePlayerTheGameTheRoundAndWhoMadeTheChange() throws {
        let alice = try user("alice"), bob = try user("bob")
        let match = try shareFriday(from: alice, to: bob)
        let watch = try BackgroundCLI(["--store", alice.storePath, "sync", "--watch", "--for", "25"])
        XCTAssertTrue(eventually { watch.stdout.text.contains("watching 2 books as alice") }, watch.stdout.text + watch.stderr.text)

        try bob.run("--book", "friday", "score", "add", "--match", match, "--player", "Ada", "--round", "2", "12")
        try bob.sync()
        XCTAssertTrue(eventually { watch.stdout.text.contains("[friday] saved Score 12 for Ada in Catan (round 2) by bob") },
                      watch.stdout.text + watch.stderr.text)
        try bob.run("--book", "friday", "match", "delete", match)
        try bob.sync()
        // The line names the match from the local copy, and who deleted it from the tombstone.
        XCTAssertTrue(eventually { watch.lines.contains { $0.hasPrefix("[friday] deleted Match Catan 20") && $0.hasSuffix(" by bob") } },
                      watch.stdout.text)
        XCTAssertTrue(watch.wait(timeout: 40), "the watch ends after --for")
        XCTAssertEqual(watch.process.terminationStatus, 0, watch.stderr.text)
        let last = try XCTUnwrap(watch.lines.last)
        XCTAssertTrue(last.hasPrefix("watched for 25 s: "), watch.stdout.text)
    }

    func testJSONWatchLinesKeepTheirShapeAndGiveTheWritersID() throws {
        let alice = try user("alice"), bob = try user("bob")
        let match = try shareFriday(from: alice, to: bob)
        let watch = try BackgroundCLI(["--store", alice.storePath, "sync", "--watch", "--for", "30", "--json"])
        Thread.sleep(forTimeInterval: 2)
        let score = try bob.create("--book", "friday", "score", "add", "--match", match, "--player", "Bo", "3")
        try bob.sync()
        XCTAssertTrue(eventually { watch.stdout.text.contains(score) }, watch.stdout.text + watch.stderr.text)
        watch.kill()
        for line in watch.lines {
            let event = try JSONValue.parse(line)
            XCTAssertNotNil(event["event"]?.stringValue, line)
            XCTAssertNotNil(event["recordType"]?.stringValue, line)
            XCTAssertNotNil(event["recordName"]?.stringValue, line)
        }
        let scoreLine = try JSONValue.parse(try XCTUnwrap(watch.lines.first { $0.contains(score) }))
        XCTAssertEqual(scoreLine["by"]?.stringValue, userRecordNames["bob"])
    }

    func testAWatchSaysWhenTheConnectionDropsAndWhenItIsBack() throws {
        let alice = try user("alice")
        let watch = try BackgroundCLI(["--store", alice.storePath, "sync", "--watch", "--for", "60"])
        XCTAssertTrue(eventually { watch.stdout.text.contains("watching 1 book as alice") }, watch.stdout.text + watch.stderr.text)
        let port = daemon.port
        try daemon.stop()
        // A local edit makes the watch reach for the server at once.
        try alice.run("person", "add", "Cy")
        XCTAssertTrue(eventually { watch.stderr.text.contains("warning: ") }, watch.stderr.text)
        retired.append(daemon)
        daemon = try DaemonProcess.start(dataDirectory: daemon.dataDirectory, extraArguments: ["--port", String(port)])
        XCTAssertTrue(eventually(40) { watch.stderr.text.contains("connected to the server again") }, watch.stderr.text)
        XCTAssertTrue(watch.process.isRunning)
        watch.kill()
    }

    func testAWatcherWhoseTokenIsRevokedStopsWithOneLine() throws {
        let alice = try user("alice")
        let watch = try BackgroundCLI(["--store", alice.storePath, "sync", "--watch", "--for", "120"])
        XCTAssertTrue(eventually { watch.stdout.text.contains("watching 1 book as alice") }, watch.stdout.text + watch.stderr.text)
        let revoke = try DaemonProcess.run("scorebookd", ["user", "revoke", "alice", "--token", tokens["alice"]!] + daemon.storeArguments)
        XCTAssertEqual(revoke.status, 0, revoke.stderr)
        // The next sync, at a local edit, meets the refusal.
        try alice.run("person", "add", "Cy")
        XCTAssertTrue(watch.wait(timeout: 30), "the watch stops by itself: " + watch.stderr.text)
        XCTAssertEqual(watch.process.terminationStatus, 1)
        let lines = watch.stderr.text.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, watch.stderr.text)
        XCTAssertTrue(lines.first?.contains("AUTHENTICATION_FAILED") ?? false, watch.stderr.text)

        // A plain sync says the same in one line.
        let sync = try alice.run(["sync"], allowFailure: true)
        XCTAssertEqual(sync.status, 1)
        XCTAssertEqual(sync.stderr.split(separator: "\n").count, 1, sync.stderr)
    }

    func testAWatchAnnouncesANewInvitationOnce() throws {
        let alice = try user("alice"), bob = try user("bob")
        try alice.run("book", "create", "friday")
        try alice.sync()
        try alice.run("book", "share", "friday", "--with", "bob@example.com")
        let first = try BackgroundCLI(["--store", bob.storePath, "sync", "--watch", "--for", "2"])
        XCTAssertTrue(first.wait(timeout: 20))
        XCTAssertTrue(first.lines.contains("invitation: \"friday\" from alice — scorebook book accept friday"), first.stdout.text)
        let second = try BackgroundCLI(["--store", bob.storePath, "sync", "--watch", "--for", "2"])
        XCTAssertTrue(second.wait(timeout: 20))
        XCTAssertFalse(second.stdout.text.contains("invitation:"), second.stdout.text)
    }
}
