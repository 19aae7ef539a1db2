import Foundation
import RecordModel
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A new machine joining a big book, end to end through the real `scorebook` and `scorebookd`:
/// its first sync fetches the book page by page, shows its progress, resumes where a killed
/// run stopped, and ends with the owner's export byte for byte.
final class CLIFirstSyncTests: XCTestCase {
    var daemon: DaemonProcess!
    var token: String!

    override func setUpWithError() throws {
        daemon = try DaemonProcess.start()
        token = try daemon.createUser("owner")
    }

    override func tearDownWithError() throws {
        try daemon?.stop()
        daemon = nil
    }

    /// The server's largest page of the change feed.
    static let pageSize = 400

    func testAFirstSyncOfABigBookShowsProgressAndEndsWithTheOwnersExport() throws {
        let owner = CLIMachine("owner"), joining = CLIMachine("joining")
        let total = try seedBook(on: owner, people: 3_000, matches: 430)
        try joining.login(daemon, token: token)

        let first = try joining.run(["sync", "--json"], environment: CLISyncTests.forcedProgress, timeout: 120)
        let summary = try JSONValue.parse(first.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(summary["received"]?["saved"]?.int64Value, Int64(total), first.stdout)
        // The spinner line counts the fetched records page by page, redrawn in place.
        XCTAssertTrue(first.stderr.contains("fetched \(Self.pageSize) records"), first.stderr.debugDescription)
        XCTAssertTrue(first.stderr.contains("\rsyncing "), first.stderr.debugDescription)

        XCTAssertEqual(try joining.run("export").stdout, try owner.run("export").stdout, "the same book on both machines")
        XCTAssertEqual(try joining.sync().received, 0, "nothing is fetched twice")
    }

    func testAKilledFirstSyncResumesFromTheStoredTokenAndEndsWithTheOwnersExport() throws {
        let owner = CLIMachine("owner"), joining = CLIMachine("joining")
        let total = try seedBook(on: owner, people: 1_500, matches: 60)
        try joining.login(daemon, token: token)

        let killed = try joining.run(["sync"], allowFailure: true, environment: ["SCOREBOOK_SYNC_STOP_AFTER_PAGES": "2"], timeout: 120)
        XCTAssertEqual(killed.status, SIGKILL, "the first run stopped hard after its second page: \(killed.stderr)")
        let kept = try joining.storedRecords().count
        XCTAssertGreaterThanOrEqual(kept, 2 * Self.pageSize, "both applied pages were committed")
        XCTAssertLessThan(kept, total)

        let resumed = try joining.run(["sync", "--json"], environment: ["SCOREBOOK_SYNC_TIMINGS": "1"], timeout: 120)
        let summary = try JSONValue.parse(resumed.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(summary["received"]?["saved"]?.int64Value, Int64(total - kept), "the second run fetched only what the first had not applied")
        let timings = try JSONValue.parse(resumed.stderr.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(timings["received"]?.int64Value, Int64(total - kept), resumed.stderr)
        XCTAssertEqual(timings["pages"]?.int64Value, Int64((total - kept + Self.pageSize - 1) / Self.pageSize), resumed.stderr)
        for phase in ["fetchSeconds", "decodeSeconds", "applySeconds"] {
            XCTAssertGreaterThan(timings[phase]?.doubleValue ?? 0, 0, "\(phase) measured: \(resumed.stderr)")
        }

        XCTAssertEqual(try joining.run("export").stdout, try owner.run("export").stdout, "the same book on both machines")
    }

    /// Imports a book of `people` people, five games and `matches` matches of two players with
    /// two rounds of scores on `owner` (one `import`, not a command per record), sends it, and
    /// returns its number of records.
    func seedBook(on owner: CLIMachine, people: Int, matches: Int) throws -> Int {
        try owner.login(daemon, token: token)
        func name(_ type: String, _ index: Int) -> String { String(format: "\(type)|~|%08X-0000-4000-8000-%012X", index, index) }
        let date = "2026-11-20T18:00:00.000Z"
        var lines: [String] = []
        func section(_ key: String, _ rows: [JSONValue], last: Bool = false) {
            lines.append("\"\(key)\":[\n" + rows.map { $0.serializedString() }.joined(separator: ",\n") + "\n]" + (last ? "}" : ","))
        }
        lines.append(#"{"format":"scorebook-export","version":1,"#)
        section("people", (0..<people).map { index in
            ["recordName": .string(name("Person", index)), "recordType": "Person", "firstName": .string("Player\(index)"),
             "lastName": "of the league", "emailAddress": .null, "modificationDate": .string(date)]
        })
        section("games", (0..<5).map { index in
            ["recordName": .string(name("Game", index)), "recordType": "Game", "name": .string("Game \(index)"), "lowScoreWins": false,
             "modificationDate": .string(date)]
        })
        section("matches", (0..<matches).map { index in
            ["recordName": .string(name("Match", index)), "recordType": "Match", "game": .string(name("Game", index % 5)),
             "startDate": .string(date), "endDate": .null, "notes": .null, "modificationDate": .string(date)]
        })
        section("players", (0..<matches * 2).map { index in
            ["recordName": .string(name("Player", index)), "recordType": "Player", "match": .string(name("Match", index / 2)),
             "person": .string(name("Person", index % people)), "seat": .int(Int64(index % 2 + 1)), "modificationDate": .string(date)]
        })
        section("scores", (0..<matches * 4).map { index in
            ["recordName": .string(name("Score", index)), "recordType": "Score", "player": .string(name("Player", index / 2)),
             "round": .int(Int64(index % 2 + 1)), "value": .double(Double(index % 13)), "modificationDate": .string(date)]
        })
        section("matchLocations", [], last: true)
        let file = owner.directory.appendingPathComponent("book.json")
        try Data(lines.joined(separator: "\n").utf8).write(to: file)
        try owner.run(["import", file.path], timeout: 120)
        let total = people + 5 + matches * 7
        XCTAssertEqual(try owner.sync().sent, total, "the owner sent the whole book")
        return total
    }
}
