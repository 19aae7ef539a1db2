import Foundation
import RecordModel
import XCTest

/// `scorebook export` and `import` (issue 15) through the real binaries: both formats round
/// trip a whole book exactly, importing twice changes nothing, a bad file changes nothing, and
/// imported records go out on the next sync.
final class CLIExportImportTests: XCTestCase {
    var files: URL!

    override func setUp() {
        files = DaemonProcess.makeTemporaryDirectory(prefix: "scorebook-export")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: files)
    }

    func file(_ name: String) -> String { files.appendingPathComponent(name).path }

    /// A book with awkward text (commas, quotes, a line break, non-ASCII), numbers that must not
    /// be rounded, two games, a finished and an open match, and a match location. Returns the
    /// number of records.
    @discardableResult
    func buildBook(on machine: CLIMachine) throws -> Int {
        try machine.run("person", "add", "Zoë", "O'Brien, Jr.", "--email", "zoe@example.com")
        try machine.run("person", "add", "Bob \"The Builder\"")
        try machine.run("person", "add", "李", "小龙")
        try machine.run("game", "add", "Catan")
        try machine.run("game", "add", "Golf, crazy", "--low-score-wins")
        let first = try machine.create("match", "start", "--game", "Catan", "--players", "Zoë,Bob \"The Builder\",李",
                                       "--date", "2026-11-20T19:30:00Z", "--notes", "Final, \"second\" leg\nrematch next week",
                                       "--location", "Kitchen, table", "--latitude", "-33.8688", "--longitude", "151.2093")
        try machine.run("score", "add", "--match", first, "--player", "Zoë", "0.1")
        try machine.run("score", "add", "--match", first, "--player", "Zoë", "0.2")
        try machine.run("score", "add", "--match", first, "--player", "Bob \"The Builder\"", "0.30000000000000004")
        try machine.run("score", "add", "--match", first, "--player", "李", "-3", "--round", "7")
        try machine.run("score", "add", "--match", first, "--player", "李", "1e-05")
        try machine.run("match", "finish", first)
        let second = try machine.create("match", "start", "--game", "Golf, crazy", "--players", "Bob \"The Builder\",Zoë")
        try machine.run("score", "add", "--match", second, "--player", "Zoë", "42")
        // 3 people, 2 games, 2 matches, 5 players, 6 scores, 1 location.
        return 19
    }

    func withoutEnteredBy(_ view: JSONValue) -> JSONValue {
        guard case .object(var members) = view, case .object(let scores) = members["scores"] else { return view }
        members["scores"] = .object(scores.mapValues { list in
            .array((list.arrayValue ?? []).map { score in
                guard case .object(var fields) = score else { return score }
                fields.removeValue(forKey: "enteredBy")
                return .object(fields)
            })
        })
        return .object(members)
    }

    /// A CSV line of an export with the given cells, the rest empty.
    func csvLine(_ cells: [String: String]) -> String {
        csvColumns.map { cells[$0] ?? "" }.joined(separator: ",") + "\n"
    }

    let csvColumns = ["recordType", "recordName", "modificationDate", "firstName", "lastName", "emailAddress", "name", "lowScoreWins",
                      "game", "startDate", "endDate", "notes", "match", "person", "seat", "player", "value", "round", "latitude",
                      "longitude"]

    func pending(_ machine: CLIMachine) throws -> Int64? { try machine.json("status")["pending"]?.int64Value }

    /// Everything the CLI shows of a book, scores included.
    func view(_ machine: CLIMachine) throws -> JSONValue {
        var snapshot = try machine.snapshot()
        var scores: [String: JSONValue] = [:]
        for match in snapshot["matches"]?.arrayValue ?? [] {
            let name = match["recordName"]?.stringValue ?? ""
            scores[name] = try machine.json("score", "list", "--match", name)
        }
        if case .object(var members) = snapshot {
            members["scores"] = .object(scores)
            snapshot = .object(members)
        }
        return snapshot
    }

    func testJSONExportImportsIntoAnotherStoreExactlyAndASecondImportChangesNothing() throws {
        let source = CLIMachine("source")
        let count = try buildBook(on: source)
        XCTAssertEqual(try source.run("export", "--to", file("book.json")).lines, ["exported \(count) records to \(file("book.json"))"])
        let exported = try String(contentsOfFile: file("book.json"), encoding: .utf8)
        XCTAssertTrue(exported.hasPrefix("{\"format\":\"scorebook-export\",\"version\":1,"), exported)
        XCTAssertEqual(try source.run("export").stdout, exported, "standard output by default, JSON by default")
        let document = try JSONValue.parse(exported)
        XCTAssertEqual(document["people"]?.arrayValue?.count, 3)
        XCTAssertEqual(document["scores"]?.arrayValue?.compactMap { $0["value"]?.doubleValue }.sorted(),
                       [-3, 1e-05, 0.1, 0.2, 0.30000000000000004, 42])
        XCTAssertEqual(document["matchLocations"]?.arrayValue?.first?["location"]?["latitude"]?.doubleValue, -33.8688)

        let target = CLIMachine("target")
        let first = try target.json("import", file("book.json"))
        XCTAssertEqual(first, ["created": .int(Int64(count)), "updated": 0, "unchanged": 0, "keptNewer": 0])
        XCTAssertEqual(try view(target), try view(source))
        try target.run("export", "--to", file("again.json"))
        XCTAssertEqual(try String(contentsOfFile: file("again.json"), encoding: .utf8), exported, "the same book, the same bytes")
        XCTAssertEqual(try pending(target), Int64(count))

        let second = try target.json("import", file("book.json"))
        XCTAssertEqual(second, ["created": 0, "updated": 0, "unchanged": .int(Int64(count)), "keptNewer": 0])
        XCTAssertEqual(try target.run("import", file("book.json")).lines, ["imported \(count) records: 0 new, 0 changed, \(count) unchanged"])
        XCTAssertEqual(try pending(target), Int64(count), "no new outbox entries")
        XCTAssertEqual(try view(target), try view(source))
        XCTAssertEqual(try source.json("import", file("book.json"))["unchanged"]?.int64Value, Int64(count), "into its own book too")
        XCTAssertEqual(try pending(source), Int64(count))
    }

    func testCSVExportImportsExactlyAndReadsBackItsOwnQuoting() throws {
        let source = CLIMachine("source")
        let count = try buildBook(on: source)
        try source.run("export", "--to", file("book.csv"))
        let csv = try String(contentsOfFile: file("book.csv"), encoding: .utf8)
        XCTAssertEqual(try source.run("export", "--format", "csv").stdout, csv, "a --to FILE ending in .csv is CSV")
        let lines = csv.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(lines.first, "recordType,recordName,modificationDate,firstName,lastName,emailAddress,name,lowScoreWins,game,"
            + "startDate,endDate,notes,match,person,seat,player,value,round,latitude,longitude")
        XCTAssertTrue(lines.contains { $0.hasPrefix("Person,") && $0.contains(",Zoë,\"O'Brien, Jr.\",zoe@example.com,") }, csv)
        XCTAssertTrue(csv.contains("\"Bob \"\"The Builder\"\"\""), "quotes doubled inside a quoted cell")
        XCTAssertTrue(csv.contains("\"Final, \"\"second\"\" leg\nrematch next week\""), "a line break inside a quoted cell")
        XCTAssertTrue(csv.contains(",0.30000000000000004,"), "numbers written exactly")
        XCTAssertEqual(lines.filter { $0.hasPrefix("Score,") }.count, 6)

        let target = CLIMachine("target")
        XCTAssertEqual(try target.json("import", file("book.csv"))["created"]?.int64Value, Int64(count))
        XCTAssertEqual(try view(target), try view(source))
        XCTAssertEqual(try target.run("export", "--format", "csv").stdout, csv)
        XCTAssertEqual(try target.run("export").stdout, try source.run("export").stdout, "the JSON of both books is the same too")
        XCTAssertEqual(try target.json("import", file("book.csv"))["unchanged"]?.int64Value, Int64(count))
        XCTAssertEqual(try pending(target), Int64(count))

        // CRLF line ends (a spreadsheet's save) read the same.
        let crlf = csv.replacingOccurrences(of: "\n", with: "\r\n").replacingOccurrences(of: "leg\r\nrematch", with: "leg\nrematch")
        try crlf.write(toFile: file("crlf.csv"), atomically: true, encoding: .utf8)
        XCTAssertEqual(try target.json("import", file("crlf.csv"))["unchanged"]?.int64Value, Int64(count))
    }

    func testImportKeepsNewerLocalEditsAndTakesNewerOnesFromTheFile() throws {
        let source = CLIMachine("source")
        let count = try buildBook(on: source)
        try source.run("export", "--to", file("old.json"))
        let target = CLIMachine("target")
        try target.run("import", file("old.json"))

        // Edited after the export on the target: the target's edit is newer and stays.
        try target.run("person", "edit", "Zoë", "--email", "zoe@new.example.com")
        let kept = try target.json("import", file("old.json"))
        XCTAssertEqual(kept["keptNewer"]?.int64Value, 1)
        XCTAssertEqual(kept["unchanged"]?.int64Value, Int64(count - 1))
        XCTAssertTrue(try target.run("person", "list").stdout.contains("zoe@new.example.com"))

        // Edited after that on the source: the file is newer and wins.
        Thread.sleep(forTimeInterval: 0.01)
        try source.run("game", "edit", "Catan", "--name", "Settlers")
        try source.run("export", "--to", file("new.json"))
        let updated = try target.json("import", file("new.json"))
        XCTAssertEqual(updated["updated"]?.int64Value, 1)
        XCTAssertEqual(try target.json("game", "list").arrayValue?.compactMap { $0["name"]?.stringValue }.sorted(), ["Golf, crazy", "Settlers"])
    }

    func testABadFileIsRefusedWithOneLineAndChangesNothing() throws {
        let target = CLIMachine("target")
        try target.run("person", "add", "Ann")
        let before = try target.run("export").stdout
        let pendingBefore = try pending(target)

        let person = "{\"recordName\":\"Person|~|11111111-1111-1111-1111-111111111111\",\"recordType\":\"Person\","
            + "\"modificationDate\":\"2026-11-20T10:00:00.000Z\",\"firstName\":\"Newcomer\"}"
        func export(_ sections: String) -> String { "{\"format\":\"scorebook-export\",\"version\":1,\(sections)}" }
        let header = csvColumns.joined(separator: ",") + "\n"
        let date = "2026-11-20T10:00:00.000Z"
        let csvPerson = csvLine(["recordType": "Person", "recordName": "Person|~|22222222-2222-2222-2222-222222222222",
                                 "modificationDate": date, "firstName": "Newcomer"])
        let cases: [(String, String, String)] = [
            ("empty.json", "", "it is empty"),
            ("words.txt", "hello, world", "neither a JSON nor a CSV"),
            ("broken.json", "{\"format\": ", "not valid JSON"),
            ("other.json", "{\"format\":\"something-else\",\"people\":[]}", "not a scorebook export"),
            ("future.json", "{\"format\":\"scorebook-export\",\"version\":2}", "version 2"),
            ("orphan.json", export("\"people\":[\(person)],\"scores\":[{\"recordName\":\"Score|~|33333333-3333-3333-3333-333333333333\","
                + "\"modificationDate\":\"2026-11-20T10:00:00.000Z\",\"player\":\"Player|~|MISSING\",\"value\":3}]"),
             "neither in the file nor in this book"),
            ("twice.json", export("\"people\":[\(person),\(person)]"), "appears twice"),
            ("wrongtype.json", export("\"games\":[\(person)]"), "recordType"),
            ("notanumber.json", export("\"people\":[\(person)],\"games\":[{\"recordName\":\"Game|~|44444444-4444-4444-4444-444444444444\","
                + "\"modificationDate\":\"2026-11-20T10:00:00.000Z\",\"name\":\"Go\",\"lowScoreWins\":\"no\"}]"),
             "lowScoreWins must be true or false"),
            ("badname.json", export("\"people\":[{\"recordName\":\"Game|~|X\",\"modificationDate\":\"2026-11-20T10:00:00.000Z\","
                + "\"firstName\":\"A\"}]"), "record name starts with \"Person|~|\""),
            ("nofirst.json", export("\"people\":[{\"recordName\":\"Person|~|X\",\"modificationDate\":\"2026-11-20T10:00:00.000Z\"}]"),
             "has no firstName"),
            ("cells.csv", header + csvPerson + "Person,Person|~|X,2026-11-20T10:00:00.000Z,Y\n", "line 3 has 4 cells"),
            ("column.csv", "recordType,recordName,modificationDate,colour\n", "unknown column \"colour\""),
            ("flag.csv", header + csvPerson + csvLine(["recordType": "Game", "recordName": "Game|~|G", "modificationDate": date,
                                                       "name": "Go", "lowScoreWins": "maybe"]),
             "lowScoreWins must be true or false"),
            ("misplaced.csv", header + csvPerson + csvLine(["recordType": "Game", "recordName": "Game|~|G", "modificationDate": date,
                                                            "name": "Go", "lowScoreWins": "true", "firstName": "Ann"]),
             "firstName does not apply to a Game"),
            ("quote.csv", header + csvPerson + "Person,Person|~|Q,\(date),\"Unclosed,,,,,,,,,,,,,,,,\n", "never closed"),
            ("latitude.csv", header + csvPerson
                + csvLine(["recordType": "Game", "recordName": "Game|~|G", "modificationDate": date, "name": "Go", "lowScoreWins": "true"])
                + csvLine(["recordType": "Match", "recordName": "Match|~|M", "modificationDate": date, "game": "Game|~|G", "startDate": date])
                + csvLine(["recordType": "MatchLocation", "recordName": "MatchLocation|~|L", "modificationDate": date, "name": "Pub",
                           "match": "Match|~|M", "latitude": "95", "longitude": "10"]), "latitude must be within"),
            ("nogame.csv", header + csvPerson
                + csvLine(["recordType": "Match", "recordName": "Match|~|M", "modificationDate": date, "game": "Game|~|G", "startDate": date]),
             "its game Game|~|G is neither in the file nor in this book"),
        ]
        for (name, contents, expected) in cases {
            try contents.write(toFile: file(name), atomically: true, encoding: .utf8)
            let result = try target.run(["import", file(name)], allowFailure: true)
            XCTAssertEqual(result.status, 1, "\(name): \(result.stderr)")
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "\(name): \(result.stderr)")
            XCTAssertTrue(result.stderr.hasPrefix("error: "), result.stderr)
            XCTAssertTrue(result.stderr.contains(expected), "\(name): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("nothing was imported"), "\(name): \(result.stderr)")
            XCTAssertEqual(result.stdout, "", name)
        }
        let missing = try target.run(["import", file("no-such-file.json")], allowFailure: true)
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("cannot read"), missing.stderr)
        XCTAssertEqual(try target.run("export").stdout, before, "no bad file changed the book")
        XCTAssertEqual(try pending(target), pendingBefore, "nor queued anything")
    }

    func testImportedRecordsGoOutOnTheNextSyncOnce() throws {
        let daemon = try DaemonProcess.start()
        defer { try? daemon.stop() }
        let token = try daemon.createUser("alice")
        let source = CLIMachine("offline")
        let count = try buildBook(on: source)
        try source.run("export", "--format", "csv", "--to", file("book.csv"))

        let laptop = CLIMachine("laptop")
        try laptop.login(daemon, token: token)
        try laptop.run("import", file("book.csv"))
        let summary = try laptop.json("sync")
        XCTAssertEqual(summary["sent"]?["saved"]?.int64Value, Int64(count), summary.serializedString())
        XCTAssertEqual(try laptop.json("import", file("book.csv"))["unchanged"]?.int64Value, Int64(count))
        XCTAssertEqual(try pending(laptop), 0, "a second import after the sync queues nothing")
        XCTAssertEqual(try laptop.sync().sent, 0)

        let phone = CLIMachine("phone")
        try phone.login(daemon, token: token)
        XCTAssertEqual(try phone.sync().received, count)
        let server = try ServerZone(daemon: daemon, token: token)
        XCTAssertEqual(server.records.count, count)
        XCTAssertEqual(server.names(ofType: "MatchLocation").count, 1)
        try assertStore(phone, equals: server, "phone")
        // Only who entered the scores differs: alice on the synced machines, nobody offline.
        XCTAssertEqual(withoutEnteredBy(try view(phone)), withoutEnteredBy(try view(source)))
    }

    func testScoreListSaysWhoEnteredEachScore() throws {
        let daemon = try DaemonProcess.start()
        defer { try? daemon.stop() }
        let alice = try daemon.createUserInfo("alice")
        let laptop = CLIMachine("laptop")
        try laptop.login(daemon, token: alice.token)
        try laptop.run("person", "add", "Ann")
        try laptop.run("game", "add", "Catan")
        let match = try laptop.create("match", "start", "--game", "Catan", "--players", "Ann")
        try laptop.run("score", "add", "--match", match, "--player", "Ann", "3")
        XCTAssertEqual(try laptop.json("score", "list", "--match", match).arrayValue?.first?["enteredBy"]?.stringValue,
                       alice.userRecordName, "entered here, by the account logged in, before any sync")
        try laptop.sync()
        let phone = CLIMachine("phone")
        try phone.login(daemon, token: alice.token)
        try phone.sync()
        let onPhone = try phone.json("score", "list", "--match", match).arrayValue ?? []
        XCTAssertEqual(onPhone.first?["enteredBy"]?.stringValue, alice.userRecordName, "the server's modified.userRecordName")
        // The table names the user, in one's own book too (issue 45); JSON above keeps the record name.
        let row = try XCTUnwrap(try phone.run("score", "list", "--match", match).lines.last)
        XCTAssertTrue(row.hasSuffix("alice"), row)
        XCTAssertFalse(row.contains(alice.userRecordName), row)
    }
}
