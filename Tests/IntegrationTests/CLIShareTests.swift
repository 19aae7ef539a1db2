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
        // JSON names the writer by user record name (text lines by name).
        while Date() < deadline, !watch.stdout.text.contains("\"by\":\"\(bobID)\"") { Thread.sleep(forTimeInterval: 0.2) }
        let scoreLine = watch.stdout.text.split(separator: "\n").first { $0.contains("\"recordType\":\"Score\"") }
        XCTAssertNotNil(scoreLine, watch.stdout.text)
        XCTAssertTrue(scoreLine?.contains("\"by\":\"\(bobID)\"") ?? false, watch.stdout.text)
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

    /// Issue 10: one `sync --watch` without `--book` follows every book of
    /// the store: a shared book's participant's change, the default book's change from the
    /// user's other machine, and a book accepted on that other machine while the watch runs.
    /// A read-only book accepted on one machine comes to the user's other machine at its next
    /// sync with its title and role, and refuses edits there too, before anything is queued.
    func testABookAcceptedOnAnotherMachineKeepsItsTitleAndReadOnlyRole() throws {
        let (alice, _) = try user("alice")
        let carolInfo = try daemon.createUserInfo("carol", email: "carol@example.com")
        let carol = CLIMachine("carol")
        try carol.login(daemon, token: carolInfo.token)
        let carolLaptop = CLIMachine("carol-laptop")
        try carolLaptop.login(daemon, token: carolInfo.token)

        try alice.run("book", "create", "friday")
        try alice.run("--book", "friday", "person", "add", "Ann")
        try alice.sync()
        try alice.run("book", "share", "friday", "--with", "carol@example.com", "--read-only")
        try carol.run("book", "accept", "friday")
        try carolLaptop.sync()

        let books = try carolLaptop.json("book", "list").arrayValue ?? []
        let friday = books.first { $0["role"]?.stringValue != "owner" }
        XCTAssertEqual(friday?["role"]?.stringValue, "read-only", "\(books)")
        XCTAssertEqual(friday?["name"]?.stringValue, "friday", "\(books)")
        let refused = try carolLaptop.run(["--book", "friday", "person", "add", "Cy"], allowFailure: true)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("read-only"), refused.stderr)
        XCTAssertEqual(try carolLaptop.sync().sent, 0, "nothing was queued")
        XCTAssertEqual(try carolLaptop.json("--book", "friday", "person", "list").arrayValue?.count, 1)
    }

    func testOneWatchCoversEveryBookAndBooksThatJoinWhileItRuns() throws {
        let aliceInfo = try daemon.createUserInfo("alice", email: "alice@example.com")
        let alice = CLIMachine("alice")
        try alice.login(daemon, token: aliceInfo.token)
        let aliceLaptop = CLIMachine("alice-laptop")
        try aliceLaptop.login(daemon, token: aliceInfo.token)
        let (bob, bobID) = try user("bob")
        let (carol, _) = try user("carol")

        try alice.run("book", "create", "friday")
        try alice.run("--book", "friday", "person", "add", "Ann")
        try alice.run("--book", "friday", "game", "add", "Go")
        let match = try alice.create("--book", "friday", "match", "start", "--game", "Go", "--players", "Ann")
        try alice.run("person", "add", "Sam")
        try alice.sync()
        try alice.run("book", "share", "friday", "--with", "bob@example.com")
        try bob.run("book", "accept", "friday")
        try bob.sync()
        try aliceLaptop.sync()

        let watch = try BackgroundCLI(["--store", alice.storePath, "sync", "--watch", "--for", "90", "--json"])
        defer { watch.kill() }
        func events() -> [JSONValue] {
            watch.stdout.text.split(separator: "\n").compactMap { try? JSONValue.parse(String($0)) }
        }
        func waitFor(_ what: String, _ matches: @escaping (JSONValue) -> Bool) {
            let deadline = Date().addingTimeInterval(15)
            while Date() < deadline, !events().contains(where: matches) { Thread.sleep(forTimeInterval: 0.2) }
            XCTAssertTrue(events().contains(where: matches), "\(what): \(watch.stdout.text) \(watch.stderr.text)")
        }
        Thread.sleep(forTimeInterval: 2)
        XCTAssertTrue(watch.process.isRunning, watch.stderr.text)

        // Bob's score in the shared book: named by its book and by bob.
        try bob.run("--book", "friday", "score", "add", "--match", match, "--player", "Ann", "9")
        XCTAssertEqual(try bob.sync().sent, 1)
        waitFor("bob's score") { $0["book"] == "friday" && $0["recordType"] == "Score" && $0["by"] == .string(bobID) }

        // Alice's other machine adds a person to her default book.
        let kim = try aliceLaptop.create("person", "add", "Kim")
        XCTAssertEqual(try aliceLaptop.sync().sent, 1)
        waitFor("the laptop's person") { $0["book"] == "ScorebookData" && $0["recordName"]?.stringValue == kim && $0["by"] == nil }

        // Carol shares her book; alice accepts it on the laptop, and the running watch takes it up.
        try carol.run("book", "create", "carols")
        try carol.run("--book", "carols", "game", "add", "Chess")
        try carol.sync()
        try carol.run("book", "share", "carols", "--with", "alice@example.com")
        try aliceLaptop.run("book", "accept", "carols")
        let hex = try carol.create("--book", "carols", "game", "add", "Hex")
        XCTAssertEqual(try carol.sync().sent, 1)
        waitFor("carol's game in the book accepted elsewhere") { $0["book"] == "carols" && $0["recordName"]?.stringValue == hex }
        XCTAssertTrue(events().contains { $0["book"] == "carols" && $0["recordType"] == "Game" && $0["recordName"]?.stringValue != hex },
                      "the new book's earlier records come with it: \(watch.stdout.text)")
        XCTAssertTrue(watch.process.isRunning, watch.stderr.text)
        watch.kill()

        XCTAssertEqual(try alice.json("--book", "carols", "game", "list").arrayValue?.count, 2)
        XCTAssertEqual(try alice.json("person", "list").arrayValue?.count, 2, "Sam and Kim")
        XCTAssertEqual(try alice.sync().received, 0, "the watch applied everything")

        // With several books, text lines name theirs.
        let textWatch = try BackgroundCLI(["--store", alice.storePath, "sync", "--watch", "--for", "80"])
        defer { textWatch.kill() }
        Thread.sleep(forTimeInterval: 2)
        try bob.run("--book", "friday", "person", "add", "Bea")
        XCTAssertEqual(try bob.sync().sent, 1)
        let deadline = Date().addingTimeInterval(15)
        func beaLine() -> Bool { textWatch.stdout.text.split(separator: "\n").contains { $0.hasPrefix("[friday] saved Person \"Bea\"") && $0.hasSuffix(" by bob") } }
        while Date() < deadline, !beaLine() { Thread.sleep(forTimeInterval: 0.2) }
        XCTAssertTrue(beaLine(), textWatch.stdout.text + textWatch.stderr.text)

        // Carol stops sharing with alice: the running watch drops the book and says so, as sync would,
        // after its next quiet poll interval (30 s; the server notifies no removed participant).
        try carol.run("book", "unshare", "carols", "--with", "alice@example.com")
        let dropDeadline = Date().addingTimeInterval(45)
        func dropped() -> Bool { textWatch.stderr.text.contains("you no longer have the book carols from carol: carol deleted it, stopped sharing it or removed you") }
        while Date() < dropDeadline, !dropped() { Thread.sleep(forTimeInterval: 0.2) }
        XCTAssertTrue(dropped(), textWatch.stdout.text + textWatch.stderr.text)
        XCTAssertTrue(textWatch.process.isRunning, textWatch.stderr.text)
        textWatch.kill()
        XCTAssertFalse(try alice.json("book", "list").arrayValue?.contains { $0["name"]?.stringValue == "carols" } ?? true)
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
