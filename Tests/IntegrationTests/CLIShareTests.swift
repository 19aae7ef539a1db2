import Foundation
import RecordModel
import XCTest

/// Issue 10, sharing through the real binaries: alice shares a book with bob (read-write) and
/// carol (read-only).
final class CLIShareTests: XCTestCase {
    var daemon: DaemonProcess!

    override func setUpWithError() throws {
        daemon = try DaemonProcess.start()
    }

    override func tearDownWithError() throws {
        try daemon?.stop()
        daemon = nil
    }

    func user(_ name: String) throws -> (machine: CLIMachine, userRecordName: String) {
        let info = try daemon.createUserInfo(name, email: "\(name)@example.com")
        let machine = CLIMachine(name)
        try machine.login(daemon, token: info.token)
        return (machine, info.userRecordName)
    }

    func testAliceSharesWithBobReadWriteAndCarolReadOnlyThenRemovesBob() throws {
        let (alice, aliceID) = try user("alice")
        let (bob, bobID) = try user("bob")
        let (carol, _) = try user("carol")

        try alice.run("book", "create", "friday")
        try alice.run("--book", "friday", "person", "add", "Ann")
        try alice.run("--book", "friday", "person", "add", "Bob")
        try alice.run("--book", "friday", "game", "add", "Go")
        let match = try alice.create("--book", "friday", "match", "start", "--game", "Go", "--players", "Ann,Bob")
        try alice.run("--book", "friday", "score", "add", "--match", match, "--player", "Ann", "5")
        try alice.sync()

        let url = try alice.run("book", "share", "friday", "--with", "bob@example.com").stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(url.contains("/share/"), url)
        let carolURL = try alice.run("book", "share", "friday", "--with", "carol@example.com", "--read-only").stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let participants = try alice.json("book", "participants", "friday").arrayValue ?? []
        let byEmail = Dictionary(participants.compactMap { entry in
            entry["emailAddress"]?.stringValue.map { ($0, entry) }
        }, uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(byEmail["bob@example.com"]?["permission"]?.stringValue, "READ_WRITE")
        XCTAssertEqual(byEmail["bob@example.com"]?["acceptanceStatus"]?.stringValue, "INVITED")
        XCTAssertEqual(byEmail["carol@example.com"]?["permission"]?.stringValue, "READ_ONLY")

        // Bob finds the invitation and accepts it by its title, then syncs the book.
        let invitations = try bob.json("book", "invitations").arrayValue ?? []
        XCTAssertEqual(invitations.compactMap { $0["title"]?.stringValue }, ["friday"])
        XCTAssertEqual(invitations.first?["owner"]?.stringValue, aliceID)
        try bob.run("book", "accept", "friday")
        XCTAssertEqual(try bob.json("book", "invitations").arrayValue?.count, 0)
        try bob.sync()
        let bobBooks = try bob.json("book", "list").arrayValue ?? []
        let shared = try XCTUnwrap(bobBooks.first { $0["name"]?.stringValue == "friday" })
        XCTAssertEqual(shared["owner"]?.stringValue, aliceID)
        XCTAssertEqual(shared["role"]?.stringValue, "read-write")
        XCTAssertEqual(try bob.json("--book", "friday", "person", "list").arrayValue?.count, 2)

        // Bob adds a score while the daemon is down, then both sync.
        try daemon.stop()
        try bob.run("--book", "friday", "score", "add", "--match", match, "--player", "Bob", "7")
        XCTAssertNotEqual(try bob.run(["sync"], allowFailure: true).status, 0)
        daemon = try DaemonProcess.start(dataDirectory: retire(), extraArguments: ["--port", String(port)])
        // Alice watches the book: bob's score arrives as a line that names bob.
        let watch = try BackgroundCLI(["--store", alice.storePath, "--book", "friday", "sync", "--watch", "--for", "60", "--json"])
        Thread.sleep(forTimeInterval: 2)
        XCTAssertTrue(watch.process.isRunning, watch.stderr.text)
        XCTAssertEqual(try bob.sync().sent, 1)
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline, !watch.stdout.text.contains("\"by\":\"bob\"") { Thread.sleep(forTimeInterval: 0.2) }
        let scoreLine = watch.stdout.text.split(separator: "\n").first { $0.contains("\"recordType\":\"Score\"") }
        XCTAssertNotNil(scoreLine, watch.stdout.text)
        XCTAssertTrue(scoreLine?.contains("\"by\":\"bob\"") ?? false, watch.stdout.text)
        watch.kill()
        XCTAssertEqual(try alice.sync().received, 0, "the watch applied it")
        let scores = try alice.json("--book", "friday", "score", "list", "--match", match).arrayValue ?? []
        let bobsScore = try XCTUnwrap(scores.first { $0["value"]?.doubleValue == 7 }, "\(scores)")
        XCTAssertEqual(bobsScore["enteredBy"]?.stringValue, bobID, "alice sees the score as bob's")
        XCTAssertEqual(scores.first { $0["value"]?.doubleValue == 5 }?["enteredBy"]?.stringValue, aliceID)
        XCTAssertEqual(bobsScore["enteredByName"]?.stringValue, "bob", "the name from public/users/discover")
        let shownScores = try alice.json("--book", "friday", "match", "show", match)["scores"]?.arrayValue ?? []
        XCTAssertEqual(shownScores.first { $0["value"]?.doubleValue == 7 }?["enteredByName"]?.stringValue, "bob")
        XCTAssertTrue(try alice.run("--book", "friday", "match", "show", match).lines.contains { $0.contains("7") && $0.hasSuffix("bob") })
        let scoreTable = try alice.run("--book", "friday", "score", "list", "--match", match).lines
        XCTAssertTrue(scoreTable.contains { $0.contains("7") && $0.hasSuffix("bob") }, scoreTable.joined(separator: "\n"))
        XCTAssertTrue(scoreTable.contains { $0.contains("5") && $0.hasSuffix("alice") }, scoreTable.joined(separator: "\n"))

        // Carol accepts by the share's URL, sees the score, and cannot edit.
        try carol.run("book", "accept", carolURL)
        try carol.sync()
        XCTAssertEqual(try carol.run("--book", "friday", "match", "show", match).stdout,
                       try alice.run("--book", "friday", "match", "show", match).stdout)
        let refused = try carol.run(["--book", "friday", "person", "add", "Cy"], allowFailure: true)
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("read-only"), refused.stderr)
        XCTAssertEqual(try carol.json("--book", "friday", "person", "list").arrayValue?.count, 2)
        XCTAssertEqual(try carol.sync().sent, 0, "nothing was queued")

        // Alice removes bob; bob's offline edit and the book are dropped at his next sync.
        try bob.run("--book", "friday", "person", "add", "Dee")
        try alice.run("book", "unshare", "friday", "--with", bobID)
        let bobSync = try bob.json("sync")
        XCTAssertEqual(bobSync["booksRemoved"]?.arrayValue?.compactMap(\.stringValue), ["friday"])
        XCTAssertEqual(bobSync["dropped"]?.arrayValue?.count, 1)
        XCTAssertEqual(try bob.json("book", "list").arrayValue?.compactMap { $0["name"]?.stringValue }, ["ScorebookData"])
        XCTAssertNotEqual(try bob.run(["--book", "friday", "person", "list"], allowFailure: true).status, 0)
        XCTAssertEqual(try alice.sync().received, 0, "bob's dropped edit never reached alice")
        XCTAssertEqual(try alice.json("--book", "friday", "person", "list").arrayValue?.count, 2)
    }

    func testAParticipantCannotDeleteOrReshareAndLeavesByName() throws {
        let (alice, _) = try user("alice")
        let (bob, bobID) = try user("bob")
        try alice.run("book", "create", "club")
        try alice.run("--book", "club", "game", "add", "Chess")
        try alice.sync()
        let url = try alice.run("book", "share", "club", "--with", bobID).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let shortGUID = try XCTUnwrap(URL(string: url)?.lastPathComponent)
        XCTAssertEqual(try bob.json("book", "accept", shortGUID)["accepted"]?.stringValue, "club")
        try bob.sync()
        XCTAssertEqual(try bob.json("--book", "club", "game", "list").arrayValue?.count, 1)

        for arguments in [["book", "delete", "club"], ["book", "share", "club", "--with", "someone@example.com"],
                          ["book", "accept", "no-such-invitation"]]
        {
            let refused = try bob.run(arguments, allowFailure: true)
            XCTAssertNotEqual(refused.status, 0, arguments.joined(separator: " "))
            XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1, refused.stderr)
        }

        try bob.run("book", "leave", "club")
        XCTAssertEqual(try bob.json("book", "list").arrayValue?.compactMap { $0["name"]?.stringValue }, ["ScorebookData"])
        let participants = try alice.json("book", "participants", "club").arrayValue ?? []
        XCTAssertFalse(participants.contains { $0["userRecordName"]?.stringValue == bobID && $0["acceptanceStatus"]?.stringValue == "ACCEPTED" },
                       "\(participants)")
        try bob.sync()
        XCTAssertEqual(try bob.json("book", "list").arrayValue?.count, 1, "a left book does not come back")
    }

    var port: Int { retiredPort }
    var retiredPort = 0
    var retired: [DaemonProcess] = []

    /// Keeps the stopped daemon (it owns the data directory) and returns that directory.
    func retire() -> URL {
        retiredPort = daemon.port
        retired.append(daemon)
        return daemon.dataDirectory
    }
}
