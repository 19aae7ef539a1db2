import Foundation
import RecordModel
import SQLiteDB
import SyncEngine
import XCTest

/// Issue 10, first slice: several books (zones) in one store, through the real binaries.
final class CLIBookTests: XCTestCase {
    var daemon: DaemonProcess!
    var token: String!

    override func setUpWithError() throws {
        daemon = try DaemonProcess.start()
        token = try daemon.createUser("alice")
    }

    override func tearDownWithError() throws {
        try daemon?.stop()
        daemon = nil
    }

    /// Ann beats Bob at Catan in the default book; Bob beats Ann at Go in "friday".
    func recordTwoBooks(on machine: CLIMachine) throws -> (catan: String, go: String) {
        try machine.run("book", "create", "friday")
        for book in ["ScorebookData", "friday"] {
            try machine.run("--book", book, "person", "add", "Ann")
            try machine.run("--book", book, "person", "add", "Bob")
        }
        try machine.run("game", "add", "Catan")
        try machine.run("--book", "friday", "game", "add", "Go")
        let catan = try machine.create("match", "start", "--game", "Catan", "--players", "Ann,Bob")
        try machine.run("score", "add", "--match", catan, "--player", "Ann", "10")
        try machine.run("score", "add", "--match", catan, "--player", "Bob", "3")
        try machine.run("match", "finish", catan)
        let go = try machine.create("--book", "friday", "match", "start", "--game", "Go", "--players", "Ann,Bob")
        try machine.run("--book", "friday", "score", "add", "--match", go, "--player", "Bob", "9")
        try machine.run("--book", "friday", "score", "add", "--match", go, "--player", "Ann", "4")
        try machine.run("--book", "friday", "match", "finish", go)
        return (catan, go)
    }

    /// Standings rows as (person, wins), from `standings --json`.
    func wins(_ machine: CLIMachine, book: String) throws -> [String: Int64] {
        let rows = try machine.json("--book", book, "standings")
        var wins: [String: Int64] = [:]
        for row in rows.arrayValue ?? [] {
            if let name = row["name"]?.stringValue { wins[name] = row["won"]?.int64Value ?? -1 }
        }
        return wins
    }

    func testTwoBooksOnOneMachineAreIndependentAndASecondMachineGetsBoth() throws {
        let laptop = CLIMachine("laptop")
        try laptop.login(daemon, token: token)
        let matches = try recordTwoBooks(on: laptop)

        // The same names in both books are different people; REFs resolve inside the book.
        let defaultPeople = try laptop.json("person", "list").arrayValue ?? []
        let fridayPeople = try laptop.json("--book", "friday", "person", "list").arrayValue ?? []
        XCTAssertEqual(defaultPeople.count, 2)
        XCTAssertEqual(fridayPeople.count, 2)
        XCTAssertTrue(Set(defaultPeople.compactMap { $0["recordName"]?.stringValue })
            .isDisjoint(with: fridayPeople.compactMap { $0["recordName"]?.stringValue }))
        XCTAssertEqual(try laptop.json("game", "list").arrayValue?.compactMap { $0["name"]?.stringValue }, ["Catan"])
        XCTAssertEqual(try laptop.json("--book", "friday", "game", "list").arrayValue?.compactMap { $0["name"]?.stringValue }, ["Go"])
        let unknown = try laptop.run(["--book", "friday", "match", "show", matches.catan], allowFailure: true)
        XCTAssertNotEqual(unknown.status, 0, "a match of another book is not found")
        XCTAssertEqual(unknown.stderr.split(separator: "\n").count, 1, unknown.stderr)

        let defaultStandings = try laptop.run("standings").stdout
        let fridayStandings = try laptop.run("--book", "friday", "standings").stdout
        XCTAssertNotEqual(defaultStandings, fridayStandings)
        XCTAssertEqual(try wins(laptop, book: "ScorebookData")["Ann"], 1)
        XCTAssertEqual(try wins(laptop, book: "ScorebookData")["Bob"], 0)
        XCTAssertEqual(try wins(laptop, book: "friday")["Bob"], 1)
        XCTAssertEqual(try wins(laptop, book: "friday")["Ann"], 0)

        let listed = try laptop.json("book", "list").arrayValue ?? []
        XCTAssertEqual(listed.compactMap { $0["name"]?.stringValue }, ["ScorebookData", "friday"])
        XCTAssertEqual(listed.compactMap { $0["role"]?.stringValue }, ["owner", "owner"])
        let recordsPerBook: Int64 = 8  // 2 people, a game, a match, 2 players, 2 scores
        XCTAssertEqual(listed.compactMap { $0["records"]?.int64Value }, [recordsPerBook, recordsPerBook])

        // One sync sends both books; a second machine receives both.
        XCTAssertEqual(try laptop.sync().sent, 16)
        let phone = CLIMachine("phone")
        try phone.login(daemon, token: token)
        XCTAssertEqual(try phone.sync().received, 16)
        XCTAssertEqual(try phone.json("book", "list").arrayValue?.compactMap { $0["name"]?.stringValue }, ["ScorebookData", "friday"])
        XCTAssertEqual(try phone.run("--book", "friday", "standings").stdout, fridayStandings)
        XCTAssertEqual(try phone.run("standings").stdout, defaultStandings)
        XCTAssertEqual(try phone.run("--book", "friday", "match", "show", matches.go).stdout,
                       try laptop.run("--book", "friday", "match", "show", matches.go).stdout)

        // An edit in one book on the phone reaches only that book on the laptop.
        try phone.run("--book", "friday", "person", "add", "Cy")
        XCTAssertEqual(try phone.sync().sent, 1)
        XCTAssertEqual(try laptop.sync().received, 1)
        XCTAssertEqual(try laptop.json("--book", "friday", "person", "list").arrayValue?.count, 3)
        XCTAssertEqual(try laptop.json("person", "list").arrayValue?.count, 2)

        // Deleting a book deletes its zone at the next sync; the other machine drops it.
        try laptop.run("book", "delete", "friday")
        XCTAssertEqual(try laptop.json("book", "list").arrayValue?.count, 1)
        try laptop.sync()
        let phoneSync = try phone.run("sync")
        XCTAssertTrue(phoneSync.stdout.contains("book friday was deleted on the server"), phoneSync.stdout)
        XCTAssertEqual(try phone.json("book", "list").arrayValue?.compactMap { $0["name"]?.stringValue }, ["ScorebookData"])
        XCTAssertEqual(try phone.run("standings").stdout, defaultStandings, "the default book is untouched")
    }

    func testBadBookNamesAndTheDefaultBookAreRefusedInOneLine() throws {
        let machine = CLIMachine("solo")
        for arguments in [["--book", "nosuch", "person", "list"], ["book", "create", "_hidden"], ["book", "delete", "ScorebookData"],
                          ["book", "delete", "nosuch"]]
        {
            let result = try machine.run(arguments, allowFailure: true)
            XCTAssertNotEqual(result.status, 0, arguments.joined(separator: " "))
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
        }
        try machine.run("book", "create", "friday")
        let again = try machine.run(["book", "create", "friday"], allowFailure: true)
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.stderr.contains("exists already"), again.stderr)
    }

    /// A store written before books (schema version 1) opens with its records, outbox and
    /// change token in the default book.
    func testAVersionOneStoreMovesIntoTheDefaultBook() throws {
        let machine = CLIMachine("old")
        let connection = try SQLiteConnection(path: machine.storePath)
        try connection.execute("""
            CREATE TABLE records(name TEXT PRIMARY KEY, type TEXT NOT NULL, fields BLOB NOT NULL, parent TEXT,
                modified_ms INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE record_references(name TEXT NOT NULL, field TEXT NOT NULL, target TEXT NOT NULL, action TEXT NOT NULL);
            CREATE TABLE server_copies(name TEXT PRIMARY KEY, type TEXT NOT NULL, change_tag TEXT, record BLOB NOT NULL,
                seen INTEGER NOT NULL DEFAULT 1);
            CREATE TABLE outbox(name TEXT PRIMARY KEY, type TEXT NOT NULL, operation TEXT NOT NULL, sequence INTEGER NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0, parked_reason TEXT);
            CREATE TABLE waiting_records(name TEXT PRIMARY KEY, record BLOB NOT NULL, missing TEXT NOT NULL);
            CREATE TABLE settings(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE sent_states(name TEXT PRIMARY KEY, record BLOB NOT NULL);
            INSERT INTO records(name, type, fields) VALUES('Person|~|11111111-1111-1111-1111-111111111111', 'Person',
                '{"firstName":{"type":"STRING","value":"Ada"}}');
            INSERT INTO outbox(name, type, operation, sequence) VALUES('Person|~|11111111-1111-1111-1111-111111111111', 'Person', 'save', 1);
            INSERT INTO settings(key, value) VALUES('syncToken', 'old-token'), ('syncEnabled', '0'), ('outboxSequence', '1');
            PRAGMA user_version = 1;
            """)
        let people = try machine.json("person", "list").arrayValue ?? []
        XCTAssertEqual(people.compactMap { $0["firstName"]?.stringValue }, ["Ada"])
        let store = try LocalRecordStore(path: machine.storePath)
        XCTAssertEqual(try store.pendingChangeCount(), 1)
        XCTAssertEqual(try store.setting("syncToken"), "old-token")
        XCTAssertEqual(try store.setting("syncEnabled"), "0")
        let friday = try store.opening(LocalBook(zoneName: "friday"))
        XCTAssertEqual(try friday.recordCount(), 0)
        XCTAssertNil(try friday.setting("syncToken"), "a zone's token belongs to its book")
        XCTAssertEqual(try friday.setting("syncEnabled"), "0", "the sync switch belongs to the file")
    }
}
