import Foundation
import RecordModel
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 45 for `sync` and `sync --watch`: what Ctrl-C says, a book that joins a running watch,
/// players and writers by name, through the real binaries.
final class CLIRoundTwoWatchTests: SharedBookTestCase {
    func testCtrlCOnASyncSaysWhatIsLeftAndStatusAndTheNextSyncAgree() throws {
        let alice = try user("alice")
        for person in ["Ada", "Bo", "Cy"] { try alice.run("person", "add", person) }
        sendSignal(daemon.processIdentifier, SIGSTOP)
        let sync = try alice.startSync()
        Thread.sleep(forTimeInterval: 2)
        sendSignal(sync.process.processIdentifier, SIGINT)
        sendSignal(daemon.processIdentifier, SIGCONT)
        XCTAssertTrue(sync.wait(timeout: 30))
        XCTAssertEqual(sync.process.terminationStatus, 130, sync.stderr.text)
        XCTAssertEqual(sync.stderr.text, "interrupted: 3 changes left to send; 'scorebook sync' sends them\n")
        XCTAssertEqual(try alice.json("status")["pending"]?.int64Value, 3)
        XCTAssertEqual(try alice.sync().sent, 3)
        XCTAssertEqual(try alice.json("status")["pending"]?.int64Value, 0)
    }

    /// A large first upload stopped mid-way, most likely while a batch the server applied waits for
    /// its answer: the line, `status` and the next sync's count are one number.
    func testCtrlCInALargeUploadLeavesACountTheNextSyncSends() throws {
        let alice = try user("alice")
        // 8,000 people: 20 batches of 400, so the interruption still falls in the middle.
        let people = (0..<8_000).map { index in
            #"{"firstName":"P\#(index)","modificationDate":"2026-01-01T00:00:00.000Z","recordName":"Person|~|"#
                + String(format: "00000000-0000-4000-8000-%012d", index) + #"","recordType":"Person"}"#
        }
        let file = alice.directory.appendingPathComponent("big.json")
        try Data((#"{"format":"scorebook-export","version":1,"people":["# + people.joined(separator: ",")
            + #"],"games":[],"matches":[],"players":[],"scores":[],"matchLocations":[]}"#).utf8).write(to: file)
        try alice.run("import", file.path)
        let sync = try alice.startSync()
        // Interrupted once part of the book is on the server.
        let token = try XCTUnwrap(tokens["alice"])
        XCTAssertTrue(eventually(60) { (try? self.serverHasRecords(token: token)) ?? false }, sync.stderr.text)
        sendSignal(sync.process.processIdentifier, SIGINT)
        XCTAssertTrue(sync.wait(timeout: 30))
        XCTAssertEqual(sync.process.terminationStatus, 130, sync.stderr.text)
        let said = try XCTUnwrap(sync.stderr.text.split(separator: " ").compactMap { Int($0) }.first, sync.stderr.text)
        XCTAssertGreaterThan(said, 0)
        XCTAssertEqual(try alice.json("status")["pending"]?.int64Value, Int64(said))
        XCTAssertEqual(try alice.sync().sent, said, "the next sync sends what was said to be left")
    }

    func testCtrlCOnAWatchPrintsTheSummaryTheEndOfForPrints() throws {
        let alice = try user("alice"), bob = try user("bob")
        let match = try shareFriday(from: alice, to: bob)
        let watch = try BackgroundCLI(["--store", alice.storePath, "sync", "--watch"])
        XCTAssertTrue(eventually { watch.stdout.text.contains("watching 2 books as alice") }, watch.stdout.text + watch.stderr.text)
        try bob.run("--book", "friday", "score", "add", "--match", match, "--player", "Ada", "4")
        try bob.sync()
        XCTAssertTrue(eventually { watch.stdout.text.contains("saved Score 4 for Ada") }, watch.stdout.text)
        sendSignal(watch.process.processIdentifier, SIGINT)
        XCTAssertTrue(watch.wait(timeout: 20))
        XCTAssertEqual(watch.process.terminationStatus, 0, watch.stderr.text)
        let last = try XCTUnwrap(watch.lines.last)
        XCTAssertTrue(last.hasPrefix("watched for "), watch.stdout.text)
        XCTAssertTrue(last.hasSuffix(" s: 1 saved, 0 deleted"), watch.stdout.text)
    }

    func testAWatchAnnouncesABookThatJoinsAndNamesPlayersByPerson() throws {
        let alice = try user("alice"), bob = try user("bob")
        let watch = try BackgroundCLI(["--store", bob.storePath, "sync", "--watch", "--for", "60"])
        XCTAssertTrue(eventually { watch.stdout.text.contains("watching 1 book as bob") }, watch.stdout.text + watch.stderr.text)
        let match = try shareFriday(from: alice, to: bob)
        XCTAssertTrue(eventually(30) { watch.stdout.text.contains("watching friday too (shared by alice)") },
                      watch.stdout.text + watch.stderr.text)

        try alice.run("--book", "friday", "person", "add", "Cy")
        try alice.sync()
        try alice.run("--book", "friday", "match", "player", "add", match, "Cy")
        try alice.sync()
        XCTAssertTrue(eventually(30) { watch.stdout.text.contains("[friday] saved Player \"Cy\" (seat 3 in Catan) by alice") },
                      watch.stdout.text + watch.stderr.text)
        watch.kill()
    }

    /// Bob joins a book shared from alice's other machine: the watcher on her laptop never saw
    /// him. Its lines, and her store afterwards, name him from his first change.
    func testAWatcherStartedBeforeABookWasSharedLearnsTheNewWritersName() throws {
        let laptop = try user("alice"), bob = try user("bob")
        let phone = CLIMachine("alice-phone")
        try phone.login(daemon, token: try XCTUnwrap(tokens["alice"]))
        try laptop.run("book", "create", "friday")
        try laptop.run("--book", "friday", "person", "add", "Ada")
        try laptop.run("--book", "friday", "game", "add", "Catan")
        let match = try laptop.create("--book", "friday", "match", "start", "--game", "Catan", "--players", "Ada")
        try laptop.sync()
        let watch = try BackgroundCLI(["--store", laptop.storePath, "sync", "--watch", "--for", "60"])
        XCTAssertTrue(eventually { watch.stdout.text.contains("watching 2 books as alice") }, watch.stdout.text + watch.stderr.text)

        try phone.sync()
        try phone.run("book", "share", "friday", "--with", "bob@example.com")
        try bob.run("book", "accept", "friday")
        try bob.sync()
        for (round, value) in [(1, "3"), (2, "5")] {
            try bob.run("--book", "friday", "score", "add", "--match", match, "--player", "Ada", "--round", String(round), value)
            try bob.sync()
            XCTAssertTrue(eventually(30) { watch.stdout.text.contains("saved Score \(value) for Ada") }, watch.stdout.text)
        }
        for value in ["3", "5"] {
            let line = try XCTUnwrap(watch.lines.first { $0.contains("saved Score \(value) for Ada") })
            XCTAssertTrue(line.hasSuffix(" by bob"), watch.stdout.text)
        }
        watch.kill()
        let table = try laptop.run("--book", "friday", "score", "list", "--match", match).stdout
        XCTAssertFalse(table.contains(try XCTUnwrap(userRecordNames["bob"])), table)
        XCTAssertTrue(table.contains("bob"), table)
    }

    /// Bob deletes a match alice started in her shared book: her watcher names him on the match's
    /// line and on its players' (the cascade), in text and, by user record name, in JSON.
    func testAWatchLineForADeletionNamesWhoDeleted() throws {
        let alice = try user("alice"), bob = try user("bob")
        let match = try shareFriday(from: alice, to: bob)
        let first = try bob.create("--book", "friday", "match", "start", "--game", "Catan", "--players", "Bo")
        try bob.sync()
        let watch = try BackgroundCLI(["--store", alice.storePath, "sync", "--watch", "--for", "60"])
        XCTAssertTrue(eventually { watch.stdout.text.contains("watching 2 books as alice") }, watch.stdout.text + watch.stderr.text)

        try bob.run("--book", "friday", "match", "delete", match, "--yes")
        try bob.sync()
        XCTAssertTrue(eventually(30) { watch.lines.contains { $0.hasPrefix("[friday] deleted Match Catan 20") } },
                      watch.stdout.text + watch.stderr.text)
        Thread.sleep(forTimeInterval: 1)
        watch.kill()
        let matchLine = try XCTUnwrap(watch.lines.first { $0.hasPrefix("[friday] deleted Match Catan 20") })
        XCTAssertTrue(matchLine.hasSuffix(" by bob"), watch.stdout.text)
        let players = watch.lines.filter { $0.hasPrefix("[friday] deleted Player ") }
        XCTAssertEqual(players.count, 2, watch.stdout.text)
        for line in players { XCTAssertTrue(line.hasSuffix(" by bob"), watch.stdout.text) }

        // JSON: the deleter's user record name, as a saved line gives its writer's.
        let json = try BackgroundCLI(["--store", alice.storePath, "sync", "--watch", "--for", "60", "--json"])
        Thread.sleep(forTimeInterval: 2)
        try bob.run("--book", "friday", "match", "delete", first, "--yes")
        try bob.sync()
        XCTAssertTrue(eventually(30) { json.stdout.text.contains(first) }, json.stdout.text + json.stderr.text)
        json.kill()
        let event = try JSONValue.parse(try XCTUnwrap(json.lines.first { $0.contains(first) }))
        XCTAssertEqual(event["event"], "deleted")
        XCTAssertEqual(event["by"]?.stringValue, userRecordNames["bob"])
    }

    /// Whether the server holds any record of the user's default book (one record of its feed).
    func serverHasRecords(token: String) throws -> Bool {
        let body = #"{"zones":[{"zoneID":{"zoneName":"ScorebookData"},"resultsLimit":1}]}"#
        let answer = try daemon.post("/database/1/iCloud.scorebook/production/private/changes/zone", token: token, json: body)
        return !(answer.body["zones"]?.arrayValue?.first?["records"]?.arrayValue ?? []).isEmpty
    }
}
