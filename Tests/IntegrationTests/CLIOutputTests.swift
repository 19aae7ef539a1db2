import Foundation
import RecordModel
import SyncEngine
import XCTest

/// Issue 15: what the real `scorebook` binary prints and accepts —
/// numbers, times, wide characters, names, control characters from other machines, standings,
/// REFs, `--version`, `--help`, where the token comes from, and the store file's mode.
final class CLIOutputTests: XCTestCase {
    func testTotalsAndAveragesPrintAsAPersonWritesThemInTextAndJSON() throws {
        let machine = CLIMachine("numbers")
        try machine.run("person", "add", "Ann")
        try machine.run("person", "add", "Bob")
        try machine.run("game", "add", "Darts")
        let match = try machine.create("match", "start", "--game", "Darts", "--players", "Ann,Bob")
        try machine.run("score", "add", "--match", match, "--player", "Ann", "0.1")
        try machine.run("score", "add", "--match", match, "--player", "Ann", "0.2")
        for _ in 0..<10 { try machine.run("score", "add", "--match", match, "--player", "Bob", "0.1") }
        try machine.run("match", "finish", match)

        let shown = try machine.run("match", "show", match)
        let rows = shown.lines.map { $0.split(separator: " ").map(String.init) }
        XCTAssertTrue(rows.contains(["1", "Bob", "1"]), "ten 0.1s are 1: \(shown.stdout)")
        XCTAssertTrue(rows.contains(["2", "Ann", "0.3"]), shown.stdout)
        let shownJSON = try machine.run(["match", "show", match, "--json"]).stdout
        XCTAssertTrue(shownJSON.contains("\"total\":0.3,") || shownJSON.contains("\"total\":0.3}"), shownJSON)
        XCTAssertFalse(shownJSON.contains("0.30000000000000004"), shownJSON)
        XCTAssertFalse(shownJSON.contains("0.9999999999999999"), shownJSON)
        let totals = try JSONValue.parse(shownJSON)["players"]?.arrayValue?.map { $0["total"]?.doubleValue }
        XCTAssertEqual(totals, [1, 0.3])

        // Ann's average over her one finished match is 0.3, in the table and in JSON.
        let standings = try machine.run("standings").lines
        XCTAssertEqual(standings.last?.split(separator: " ", omittingEmptySubsequences: true).last, "0.3", "\(standings)")
        let standingsJSON = try machine.run(["standings", "--json"]).stdout
        XCTAssertTrue(standingsJSON.contains("\"averageScore\":0.3,"), standingsJSON)
        XCTAssertFalse(standingsJSON.contains("0.30000000000000004"), standingsJSON)
    }

    func testTextShowsLocalTimesWithTheirOffsetAndJSONKeepsUTC() throws {
        let machine = CLIMachine("times")
        try machine.run("person", "add", "Ann")
        try machine.run("game", "add", "Go")
        let match = try machine.create("match", "start", "--game", "Go", "--players", "Ann")
        // POSIX zone strings: no zone files needed. "XYZ-5:30" is UTC+05:30, "ABC+4" UTC-04:00.
        for (zone, seconds, offset) in [("XYZ-5:30", 19_800, "+05:30"), ("ABC+4", -14_400, "-04:00"), ("UTC0", 0, "+00:00")] {
            let environment = ["TZ": zone]
            let json = try JSONValue.parse(try machine.run(["match", "show", match, "--json"], environment: environment).stdout)
            let startText = try XCTUnwrap(json["startDate"]?.stringValue)
            XCTAssertTrue(startText.hasSuffix("Z"), "JSON stays UTC under TZ=\(zone): \(startText)")
            let start = try XCTUnwrap(isoDate(startText))
            let local = DateFormatter()
            local.locale = Locale(identifier: "en_US_POSIX")
            local.timeZone = TimeZone(secondsFromGMT: seconds)
            local.dateFormat = "yyyy-MM-dd HH:mm:ss"
            let expected = "\(local.string(from: start)) \(offset)"

            let shown = try machine.run(["match", "show", match], environment: environment)
            XCTAssertTrue(shown.lines.contains("started \(expected), in progress"), "TZ=\(zone): \(shown.stdout)")
            let listed = try machine.run(["match", "list"], environment: environment)
            XCTAssertTrue(listed.stdout.contains(String(expected.prefix(16)) + " " + offset), "TZ=\(zone): \(listed.stdout)")
            let listedJSON = try machine.run(["match", "list", "--json"], environment: environment)
            XCTAssertTrue(listedJSON.stdout.contains("\"startDate\":\"\(startText)\""), listedJSON.stdout)
        }
    }

    func testTableColumnsLineUpForWideCharactersEmojiAndCombiningMarks() throws {
        let machine = CLIMachine("wide")
        // Display widths: カタン 6, 🎲 Dice 7, 👨‍👩‍👧 Family 9 (one emoji), Café 4 (e + U+0301), ＧＯ 4.
        let names = [("Cafe\u{301}", 4), ("カタン", 6), ("🎲 Dice", 7), ("👨‍👩‍👧 Family", 9), ("ＧＯ", 4)]
        var recordNames: [String: String] = [:]
        for (name, _) in names { recordNames[name] = try machine.create("game", "add", name) }
        let lines = try machine.run("game", "list").lines
        XCTAssertEqual(lines.first, "NAME" + String(repeating: " ", count: 9 - 4 + 2) + "SCORING          RECORD NAME")
        for (name, width) in names {
            let expected = name + String(repeating: " ", count: 9 - width + 2) + "high score wins  " + recordNames[name]!
            XCTAssertTrue(lines.contains(expected), "\(name) padded to 9 columns: \(lines)")
        }
        XCTAssertEqual(lines.count, names.count + 1)
    }

    func testNamesAreOneTo200CharactersWithoutControlCharacters() throws {
        let machine = CLIMachine("names")
        let longest = String(repeating: "é", count: 200)
        try machine.run("person", "add", longest)
        try machine.run("person", "add", "Ann", "  Lee  ")
        try machine.run("game", "add", "Go")
        let refused: [[String]] = [
            ["person", "add", ""], ["person", "add", "   "], ["person", "add", String(repeating: "x", count: 201)],
            ["person", "add", "Eve\u{1B}[2J"], ["person", "add", "Eve", "Tab\tName"], ["person", "add", "Line\nBreak"],
            ["person", "add", "C1\u{9B}31m"], ["person", "add", "Del\u{7F}"],
            ["game", "add", "Go\u{7}"], ["game", "add", String(repeating: "ゲ", count: 201)],
            ["person", "edit", "Ann", "--first", "A\u{1B}nn"], ["person", "edit", "Ann", "--first", ""],
            ["person", "edit", "Ann", "--last", String(repeating: "y", count: 201)],
            ["game", "edit", "Go", "--name", "Go\u{1}"], ["game", "edit", "Go", "--name", String(repeating: "z", count: 201)],
        ]
        for arguments in refused {
            let result = try machine.run(arguments, allowFailure: true)
            XCTAssertEqual(result.status, 1, "\(arguments.debugDescription): \(result.stderr)")
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "one line: \(result.stderr.debugDescription)")
            XCTAssertTrue(result.stderr.hasPrefix("error: "), result.stderr)
            XCTAssertEqual(result.stdout, "")
            XCTAssertFalse(result.stderr.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" || $0.value == 0x7F },
                           "the message itself carries no control character: \(result.stderr.debugDescription)")
        }
        XCTAssertTrue(try machine.run(["person", "add", "Eve\u{1B}[2J"], allowFailure: true).stderr.contains("control"))
        XCTAssertTrue(try machine.run(["game", "add", String(repeating: "x", count: 201)], allowFailure: true).stderr.contains("200"))
        let people = try machine.json("person", "list").arrayValue ?? []
        XCTAssertEqual(people.compactMap { $0["firstName"]?.stringValue }.sorted(), ["Ann", longest], "nothing refused was stored")
        XCTAssertEqual(people.first { $0["firstName"] == "Ann" }?["lastName"], "Lee", "spaces around a name are dropped")
        XCTAssertEqual(try machine.json("game", "list").arrayValue?.compactMap { $0["name"]?.stringValue }, ["Go"])
    }

    /// Records written by another client straight to the server, with ESC, C1 CSI, DEL, BEL and
    /// a newline in their names, reach this store intact but never reach the terminal raw.
    func testControlCharactersFromAnotherMachineArePrintedEscaped() throws {
        let daemon = try DaemonProcess.start()
        let token = try daemon.createUser("ann")
        let machine = CLIMachine("escapes")
        try machine.login(daemon, token: token)
        try machine.run("game", "add", "Chess")
        try machine.sync()  // makes the zone

        let hostileFirst = "Eve\u{1B}[2J\u{9B}31m\u{7F}"
        let hostileLast = "X\nY"
        let hostileGame = "Evil\u{1B}]0;owned\u{7}"
        let person = "Person|~|\(UUID().uuidString)"
        let game = "Game|~|\(UUID().uuidString)"
        let now = JSONValue.int(Int64(Date().timeIntervalSince1970 * 1000))
        let body: JSONValue = ["zoneID": ["zoneName": "ScorebookData"], "operations": [
            ["operationType": "create", "record": ["recordName": .string(person), "recordType": "Person", "fields": [
                "firstName": ["value": .string(hostileFirst)], "lastName": ["value": .string(hostileLast)],
                "modificationDate": ["value": now, "type": "TIMESTAMP"]]]],
            ["operationType": "create", "record": ["recordName": .string(game), "recordType": "Game", "fields": [
                "name": ["value": .string(hostileGame)], "modificationDate": ["value": now, "type": "TIMESTAMP"]]]],
        ]]
        let answer = try daemon.post("/database/1/iCloud.scorebook/production/private/records/modify", token: token,
                                     json: body.serializedString())
        XCTAssertEqual(answer.status, 200, answer.body.serializedString())
        XCTAssertNil(answer.body["records"]?.arrayValue?.first { $0["serverErrorCode"] != nil }, answer.body.serializedString())

        // Applied by a watch, which prints a line per change.
        let watch = try BackgroundCLI(["--store", machine.storePath, "sync", "--watch", "--for", "2"])
        XCTAssertTrue(watch.wait(timeout: 30), "sync --watch --for 2 ends by itself")
        XCTAssertEqual(watch.process.terminationStatus, 0, watch.stderr.text)
        let watched = watch.stdout.text
        XCTAssertTrue(watched.contains("saved Person \"Eve\\u{1B}[2J\\u{9B}31m\\u{7F} X\\u{A}Y\" (\(person))"), watched)
        XCTAssertTrue(watched.contains("saved Game \"Evil\\u{1B}]0;owned\\u{7}\" (\(game))"), watched)
        assertNoRawControls(watched, "sync --watch")

        let match = try machine.create("match", "start", "--game", game, "--players", person)
        try machine.run("score", "add", "--match", match, "--player", person, "3")
        let outputs: [(String, [String], String)] = [
            ("person list", ["person", "list"], "Eve\\u{1B}[2J\\u{9B}31m\\u{7F} X\\u{A}Y"),
            ("game list", ["game", "list"], "Evil\\u{1B}]0;owned\\u{7}"),
            ("match list", ["match", "list"], "Evil\\u{1B}]0;owned\\u{7}"),
            ("match show", ["match", "show", match], "Evil\\u{1B}]0;owned\\u{7} — "),
            ("standings", ["standings"], "Eve\\u{1B}[2J"),
            ("game delete", ["game", "delete", "Chess"], "Chess"),
        ]
        for (label, arguments, expected) in outputs {
            let output = try machine.run(arguments).stdout
            XCTAssertTrue(output.contains(expected), "\(label): \(output)")
            assertNoRawControls(output, label)
        }
        // The match show table lines up with the escaped name: TOTAL stands above the 3.
        let table = try machine.run("match", "show", match).lines.filter { $0.hasPrefix("RANK") || $0.hasPrefix("1 ") }
        XCTAssertEqual(table.count, 2, "\(table)")
        if table.count == 2, let total = table[0].range(of: "TOTAL") {
            XCTAssertEqual(table[0].distance(from: table[0].startIndex, to: total.lowerBound), table[1].count - 1, "\(table)")
            XCTAssertTrue(table[1].hasSuffix("  3"), table[1])
        }

        // JSON keeps the data exactly and escapes every control character, DEL and C1 included.
        let json = try machine.run(["person", "list", "--json"]).stdout
        assertNoRawControls(json, "person list --json")
        XCTAssertTrue(json.contains("Eve\\u001b[2J\\u009b31m\\u007f"), json)
        let parsed = try JSONValue.parse(json.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(parsed.arrayValue?.first { $0["recordName"]?.stringValue == person }?["firstName"]?.stringValue, hostileFirst)
        try daemon.stop()
    }

    func assertNoRawControls(_ text: String, _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        let raw = text.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) }
        XCTAssertTrue(raw.isEmpty, "\(label) printed raw control characters \(raw.map { String($0.value, radix: 16) })",
                      file: file, line: line)
    }

    func testStandingsCountFinishedMatchesOnly() throws {
        let machine = CLIMachine("standings")
        let ann = try machine.create("person", "add", "Ann")
        try machine.run("person", "add", "Bob")
        try machine.run("game", "add", "Go")
        let finished = try machine.create("match", "start", "--game", "Go", "--players", "Ann,Bob")
        try machine.run("score", "add", "--match", finished, "--player", "Ann", "10")
        try machine.run("score", "add", "--match", finished, "--player", "Bob", "5")
        try machine.run("match", "finish", finished)
        let running = try machine.create("match", "start", "--game", "Go", "--players", "Ann,Bob")
        try machine.run("score", "add", "--match", running, "--player", "Bob", "100")

        XCTAssertEqual(try machine.run("standings").lines, [
            "PERSON  PLAYED  WON  WIN RATE  AVERAGE SCORE",
            "Ann     1       1    100%      10",
            "Bob     1       0    0%        5",
        ])
        let rows = try machine.json("standings").arrayValue ?? []
        XCTAssertEqual(rows.map { $0["played"]?.int64Value }, [1, 1], "the match in progress is not played yet")
        XCTAssertEqual(rows.map { $0["averageScore"]?.doubleValue }, [10, 5])
        XCTAssertEqual(rows.first?["person"]?.stringValue, ann)
        XCTAssertEqual(rows.first?["winRate"]?.doubleValue, 1)
    }

    func testAWholeDisplayNameWinsAndScoreValuesMayFollowADoubleDash() throws {
        let machine = CLIMachine("refs")
        let lovelace = try machine.create("person", "add", "Ada", "Lovelace")
        let ada = try machine.create("person", "add", "Ada")
        try machine.run("game", "add", "Go")
        let match = try machine.create("match", "start", "--game", "Go", "--players", "Ada,ada lovelace")
        let players = try machine.json("match", "show", match)["players"]?.arrayValue ?? []
        XCTAssertEqual(Set(players.compactMap { $0["person"]?.stringValue }), [ada, lovelace])

        try machine.run("score", "add", "--match", match, "--player", "Ada", "--", "7")
        try machine.run("score", "add", "--match", match, "--player", "Ada", "--", "-3")
        try machine.run("score", "add", "--match", match, "--player", "Ada Lovelace", "-2")
        let totals = try machine.json("match", "show", match)["players"]?.arrayValue ?? []
        XCTAssertEqual(totals.first { $0["person"]?.stringValue == ada }?["total"]?.doubleValue, 4, "7 and -3 went to Ada")
        XCTAssertEqual(totals.first { $0["person"]?.stringValue == lovelace }?["total"]?.doubleValue, -2)

        // A first name shared by two people with last names stays ambiguous (exit 2).
        try machine.run("person", "add", "Bea", "One")
        try machine.run("person", "add", "Bea", "Two")
        let ambiguous = try machine.run(["match", "start", "--game", "Go", "--players", "Bea"], allowFailure: true)
        XCTAssertEqual(ambiguous.status, 2, ambiguous.stderr)
        let notANumber = try machine.run(["score", "add", "--match", match, "--player", "Ada", "--", "seven"], allowFailure: true)
        XCTAssertNotEqual(notANumber.status, 0)
        XCTAssertEqual(notANumber.stderr.split(separator: "\n").count, 1, notANumber.stderr)
    }

    func testVersionAndHelpShowHowToStartAndTheGlobalOptions() throws {
        for program in ["scorebook", "scorebookd"] {
            let version = try DaemonProcess.run(program, ["--version"])
            XCTAssertEqual(version.status, 0, version.stderr)
            XCTAssertNotNil(version.stdout.range(of: "^\(program) [0-9]+\\.[0-9]+\\.[0-9]+\n$", options: .regularExpression),
                            version.stdout.debugDescription)
        }
        let help = try DaemonProcess.run("scorebook", ["--help"])
        XCTAssertEqual(help.status, 0)
        let lines = help.stdout.components(separatedBy: "\n")
        let start = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("QUICK START") }, help.stdout)
        let quickStart = Array(lines[(start + 1)...].prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty })
        XCTAssertEqual(quickStart.count, 3, "a three-line quick start: \(quickStart)")
        for option in ["--store <path>", "SCOREBOOK_STORE", "--json", "--help", "--version"] {
            XCTAssertTrue(help.stdout.contains(option), "--help names \(option)")
        }

        // The quick start works as printed.
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "quick-start")
        defer { try? FileManager.default.removeItem(at: directory) }
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-e", "-c", quickStart.joined(separator: "\n")]
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = DaemonProcess.binaryURL("scorebook").deletingLastPathComponent().path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["SCOREBOOK_STORE"] = directory.appendingPathComponent("quick.sqlite").path
        shell.environment = environment
        let output = Pipe()
        shell.standardOutput = output
        shell.standardError = output
        try shell.run()
        let collected = PipeCollector(output.fileHandleForReading)
        XCTAssertTrue(DaemonProcess.waitForExit(shell, timeout: 60))
        _ = collected.waitForEOF(timeout: 5)
        XCTAssertEqual(shell.terminationStatus, 0, collected.text)
        XCTAssertTrue(collected.text.contains("RANK  PLAYER  TOTAL"), collected.text)
    }

    func testTheTokenComesFromExactlyOneOfFlagFileAndEnvironment() throws {
        let daemon = try DaemonProcess.start()
        let token = try daemon.createUser("ann")
        let server = daemon.baseURL.absoluteString
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "token-file")
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokenFile = directory.appendingPathComponent("token").path
        try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: tokenFile))
        let emptyFile = directory.appendingPathComponent("empty").path
        XCTAssertTrue(FileManager.default.createFile(atPath: emptyFile, contents: Data()))

        let fromFile = CLIMachine("token-file")
        try fromFile.run(["account", "login", "--server", server, "--token-file", tokenFile])
        XCTAssertEqual(try fromFile.json("account", "status")["loggedIn"], true)
        try fromFile.run("game", "add", "Go")
        XCTAssertEqual(try fromFile.sync().sent, 1, "the token read from the file works")
        let status = try fromFile.run(["status"], environment: ["TZ": "XYZ-5:30"]).stdout
        XCTAssertNotNil(status.range(of: #"last sync: [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} \+05:30\n"#,
                                     options: .regularExpression), "status shows the local time: \(status)")

        let fromEnvironment = CLIMachine("token-env")
        try fromEnvironment.run(["account", "login", "--server", server], environment: ["SCOREBOOK_TOKEN": token])
        XCTAssertEqual(try fromEnvironment.sync().received, 1)

        let wrong: [([String], [String: String], String)] = [
            (["--token", token, "--token-file", tokenFile], [:], "--token-file"),
            (["--token", token], ["SCOREBOOK_TOKEN": token], "SCOREBOOK_TOKEN"),
            (["--token-file", tokenFile], ["SCOREBOOK_TOKEN": token], "SCOREBOOK_TOKEN"),
            ([], [:], "--token"),
            (["--token-file", directory.appendingPathComponent("missing").path], [:], "missing"),
            (["--token-file", emptyFile], [:], "empty"),
        ]
        for (arguments, environment, mentioned) in wrong {
            let machine = CLIMachine("token-wrong")
            let result = try machine.run(["account", "login", "--server", server] + arguments, allowFailure: true,
                                         environment: environment.isEmpty ? ["SCOREBOOK_TOKEN": ""] : environment)
            XCTAssertEqual(result.status, 1, "\(arguments) \(environment.keys): \(result.stderr)")
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
            XCTAssertTrue(result.stderr.contains(mentioned), "\(arguments): \(result.stderr)")
            XCTAssertEqual(try machine.json("account", "status")["loggedIn"], false)
        }
        try daemon.stop()
    }

    func testTheStoreFileAndItsJournalFilesAreTheOwnersOnly() throws {
        let machine = CLIMachine("mode")
        // A store in a folder that does not exist yet: the folder is made too, the owner's only.
        let nested = machine.directory.appendingPathComponent("new/folder")
        let nestedStore = nested.appendingPathComponent("book.sqlite").path
        let run = try DaemonProcess.run("scorebook", ["--store", nestedStore, "game", "add", "Go"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(try Self.mode(nestedStore), 0o600)
        XCTAssertEqual(try Self.mode(nested.path), 0o700)

        try machine.run("game", "add", "Go")
        XCTAssertEqual(try Self.mode(machine.storePath), 0o600)
        // SQLite makes the -wal and -shm files while a connection is open; they take the mode of
        // the store file.
        let store = try LocalRecordStore(path: machine.storePath)
        XCTAssertEqual(try store.records(ofType: "Game").count, 1)
        for suffix in ["-wal", "-shm"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: machine.storePath + suffix), suffix)
            XCTAssertEqual(try Self.mode(machine.storePath + suffix), 0o600, suffix)
        }
        withExtendedLifetime(store) {}
    }

    static func mode(_ path: String) throws -> Int {
        ((try FileManager.default.attributesOfItem(atPath: path))[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

}
