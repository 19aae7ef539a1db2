import Foundation
import RecordModel
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 4 end to end: the real `scorebook` binary on two or three stores, syncing through a
/// real `scorebookd`.
final class CLISyncTests: XCTestCase {
    var daemon: DaemonProcess!
    var token: String!

    override func setUpWithError() throws {
        daemon = try DaemonProcess.start()
        token = try daemon.createUser("alice")
    }

    /// Daemons replaced by `restartOnTheSamePort`: the first owns the data directory, which goes
    /// when it does, so they are kept until the test ends.
    var retiredDaemons: [DaemonProcess] = []

    override func tearDownWithError() throws {
        defer { retiredDaemons = [] }
        try daemon?.stop()
        daemon = nil
    }

    /// Starts the (stopped) daemon again on its data directory and on the port it had, so the
    /// stores' saved server URL still reaches it; retries while the port is briefly busy.
    func restartOnTheSamePort() throws {
        let (port, directory) = (daemon.port, daemon.dataDirectory)
        if daemon.isRunning { try daemon.stop() }
        retiredDaemons.append(daemon)
        var failure: Error?
        for _ in 0..<10 {
            do {
                // `--port` given twice: the last one counts.
                daemon = try DaemonProcess.start(dataDirectory: directory, extraArguments: ["--port", String(port)])
                XCTAssertEqual(daemon.port, port)
                return
            } catch {
                failure = error
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
        throw failure ?? DaemonError("could not restart on port \(port)")
    }

    func machines(_ names: String...) throws -> [CLIMachine] {
        try names.map { name in
            let machine = CLIMachine(name)
            try machine.login(daemon, token: token)
            return machine
        }
    }

    /// Catan with Ann and Bob; Ann wins 12 to 7. Returns the match's record name.
    func recordMatch(on machine: CLIMachine) throws -> String {
        try machine.run("person", "add", "Ann", "Lee", "--email", "ann@example.com")
        try machine.run("person", "add", "Bob")
        try machine.run("game", "add", "Catan")
        let match = try machine.create("match", "start", "--game", "Catan", "--players", "Ann,Bob")
        try machine.run("score", "add", "--match", match, "--player", "Ann", "10")
        try machine.run("score", "add", "--match", match, "--player", "Bob", "7")
        try machine.run("score", "add", "--match", match, "--player", "Ann", "2")
        try machine.run("match", "finish", match)
        return match
    }

    func testAMatchRecordedOnOneMachineShowsIdenticallyOnAnother() throws {
        let machines = try machines("laptop", "phone")
        let (laptop, phone) = (machines[0], machines[1])
        let match = try recordMatch(on: laptop)
        XCTAssertEqual(try laptop.sync().sent, 9)
        XCTAssertEqual(try phone.sync().received, 9)
        XCTAssertEqual(try phone.run("match", "show", match).stdout, try laptop.run("match", "show", match).stdout)
        XCTAssertEqual(try phone.run("standings").stdout, try laptop.run("standings").stdout)
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())
        let shown = try phone.json("match", "show", match)
        XCTAssertEqual(shown["players"]?.arrayValue?.map { $0["total"]?.doubleValue }, [12, 7])
        XCTAssertEqual(shown["winner"], try phone.json("person", "list").arrayValue?.first?["recordName"])
        try assertStore(phone, equals: try ServerZone(daemon: daemon, token: token), "phone")
        XCTAssertEqual(try laptop.json("status")["pending"]?.int64Value, 0)
    }

    /// A book zone shared over HTTP holds the system record `cloudkit.zoneshare`
    /// (type `cloudkit.share`, which no Scorebook type models): sync skips it, and both machines
    /// keep syncing (the record used to fail every sync with "entry that is not a record").
    func testABookWhoseZoneIsSharedKeepsSyncing() throws {
        let machines = try machines("laptop", "phone")
        let (laptop, phone) = (machines[0], machines[1])
        let match = try recordMatch(on: laptop)
        XCTAssertEqual(try laptop.sync().sent, 9)
        let share: JSONValue = ["zoneID": ["zoneName": "ScorebookData"], "operations": [["operationType": "create", "record": [
            "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "fields": ["cloudkit.title": ["value": "Friday games"]],
            "participants": [["type": "USER", "permission": "READ_ONLY", "userIdentity": ["lookupInfo": ["emailAddress": "bob@example.com"]]]],
        ]]]]
        let saved = try daemon.post("/database/1/iCloud.scorebook/production/private/records/modify", token: token, json: share.serializedString())
        XCTAssertEqual(saved.body["records"]?.arrayValue?.first?["recordType"], "cloudkit.share", saved.body.serializedString())

        try laptop.run("person", "add", "Cleo")
        XCTAssertEqual(try laptop.sync().sent, 1)
        XCTAssertEqual(try phone.sync().received, 10, "the nine records and the new person; not the share")
        XCTAssertEqual(try phone.json("person", "list").arrayValue?.count, 3)
        XCTAssertEqual(try phone.run("match", "show", match).stdout, try laptop.run("match", "show", match).stdout)
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())
        XCTAssertEqual(try laptop.json("status")["pending"]?.int64Value, 0)
    }

    func testADeletionIsReportedBySyncWatchOnTheOtherMachineAndApplied() throws {
        let machines = try machines("laptop", "phone")
        let (laptop, phone) = (machines[0], machines[1])
        _ = try recordMatch(on: laptop)
        try laptop.sync()
        try phone.sync()
        let game = try XCTUnwrap(try laptop.json("game", "list").arrayValue?.first?["recordName"]?.stringValue)
        let watch = try phone.startWatch(seconds: 8)
        Thread.sleep(forTimeInterval: 2)
        try laptop.run("game", "delete", "Catan", "--yes")
        try laptop.sync()
        XCTAssertTrue(watch.wait(timeout: 20), "sync --watch --for 8 ends by itself")
        XCTAssertEqual(watch.process.terminationStatus, 0, watch.stderr.text)
        let events = try watch.lines.map { try JSONValue.parse($0) }
        XCTAssertTrue(events.contains(["event": "deleted", "recordType": "Game", "recordName": .string(game)]), "\(watch.lines)")
        XCTAssertTrue(events.contains { $0["event"] == "deleted" && $0["recordType"] == "Match" })
        XCTAssertEqual(try phone.json("game", "list"), [])
        XCTAssertEqual(try phone.json("match", "list"), [])
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())
    }

    /// `sync --json` counts a deletion as one sent delete (the server cascades) and, on the other
    /// machine, as every record it removed: the game, its match, 2 players and 3 scores.
    func testTheSyncSummaryCountsADeletionAndItsCascade() throws {
        let machines = try machines("laptop", "phone")
        let (laptop, phone) = (machines[0], machines[1])
        _ = try recordMatch(on: laptop)
        try laptop.sync()
        try phone.sync()
        try laptop.run("game", "delete", "Catan", "--yes")
        let sent = try laptop.json("sync")
        XCTAssertEqual(sent["sent"]?["deleted"], 1)
        let received = try phone.json("sync")
        XCTAssertEqual(received["received"]?["deleted"], 7)
        XCTAssertEqual(received["received"]?["saved"], 0)
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())
    }

    func testWatchPrintsReadableLinesWithoutJSON() throws {
        let machines = try machines("laptop", "phone")
        let (laptop, phone) = (machines[0], machines[1])
        try laptop.run("game", "add", "Catan")
        try laptop.sync()
        try phone.sync()
        let game = try XCTUnwrap(try laptop.json("game", "list").arrayValue?.first?["recordName"]?.stringValue)
        try laptop.run("game", "delete", "Catan")
        try laptop.sync()
        let watch = try BackgroundCLI(["--store", phone.storePath, "sync", "--watch", "--for", "2"])
        XCTAssertTrue(watch.wait(timeout: 15))
        // A start line, the change, and the summary of the time watched.
        XCTAssertEqual(watch.lines.count, 3, watch.stdout.text)
        XCTAssertTrue(watch.lines.first?.hasPrefix("watching 1 book as ") ?? false, watch.stdout.text)
        XCTAssertEqual(watch.lines.dropFirst().first, "deleted Game \"Catan\" (\(game))")
        XCTAssertEqual(watch.lines.last, "watched for 2 s: 0 saved, 1 deleted")
    }

    func testConcurrentEditsToDifferentFieldsBothSurvive() throws {
        let machines = try machines("laptop", "phone")
        let (laptop, phone) = (machines[0], machines[1])
        try laptop.run("person", "add", "Ann", "Lee")
        try laptop.sync()
        try phone.sync()
        try laptop.run("person", "edit", "Ann", "--email", "ann@example.com")
        try phone.run("person", "edit", "Ann", "--last", "Smith")
        try laptop.sync()
        try phone.sync()
        try laptop.sync()
        for machine in [laptop, phone] {
            let ann = try XCTUnwrap(try machine.json("person", "list").arrayValue?.first)
            XCTAssertEqual(ann["lastName"], "Smith", machine.name)
            XCTAssertEqual(ann["emailAddress"], "ann@example.com", machine.name)
        }
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())
    }

    func testTheSameFieldEditedOnTwoMachinesConvergesToTheNewerEdit() throws {
        let machines = try machines("laptop", "phone")
        let (laptop, phone) = (machines[0], machines[1])
        try laptop.run("game", "add", "Catan")
        try laptop.sync()
        try phone.sync()
        try laptop.run("game", "edit", "Catan", "--name", "Older name")
        Thread.sleep(forTimeInterval: 0.05)
        try phone.run("game", "edit", "Catan", "--name", "Newer name")
        // The older edit reaches the server last, and still loses.
        try phone.sync()
        XCTAssertEqual(try laptop.sync().conflicts, 1)
        try phone.sync()
        for machine in [laptop, phone] {
            XCTAssertEqual(try machine.json("game", "list").arrayValue?.first?["name"], "Newer name", machine.name)
        }
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())
    }

    func testEditsMadeWhileTheDaemonIsDownAreSentOnceWhenItReturns() throws {
        let machines = try machines("laptop", "phone")
        let (laptop, phone) = (machines[0], machines[1])
        try daemon.stop()
        try laptop.run("game", "add", "Catan")
        try laptop.run("person", "add", "Ann")
        let offline = try laptop.run(["sync"], allowFailure: true)
        XCTAssertNotEqual(offline.status, 0)
        XCTAssertEqual(offline.stderr.split(separator: "\n").count, 1, offline.stderr)
        let status = try laptop.json("status")
        XCTAssertEqual(status["pending"]?.int64Value, 2)
        XCTAssertNotNil(status["lastError"]?.stringValue)

        // Same data, same port: the stores' saved account reaches it, with no new login.
        let server = try XCTUnwrap(try laptop.json("status")["account"]?["server"]?.stringValue)
        try restartOnTheSamePort()
        XCTAssertEqual(daemon.baseURL.absoluteString, server)
        XCTAssertEqual(try laptop.sync().sent, 2)
        XCTAssertEqual(try laptop.sync().sent, 0, "sent once")
        XCTAssertEqual(try laptop.json("status")["pending"]?.int64Value, 0)
        XCTAssertEqual(try phone.sync().received, 2)
        XCTAssertEqual(try phone.json("game", "list").arrayValue?.count, 1)
        XCTAssertTrue(try laptop.json("status")["lastError"]?.isNull ?? false)
        let zone = try ServerZone(daemon: daemon, token: token)
        XCTAssertEqual(zone.records.count, 2, "one game and one person on the server, nothing twice")
        XCTAssertEqual(zone.names(ofType: "Game").count, 1)
        XCTAssertEqual(zone.names(ofType: "Person").count, 1)
        try assertStore(phone, equals: zone, "phone")
        try assertStore(laptop, equals: zone, "laptop")
    }

    func testRecordsMadeBeforeAnyLoginBelongToTheFirstAccountToLogIn() throws {
        let bobToken = try daemon.createUser("bob")
        let offline = CLIMachine("offline")
        let match = try recordMatch(on: offline)
        XCTAssertTrue(try offline.json("status")["account"]?.isNull ?? false, "never logged in")
        XCTAssertEqual(try offline.json("status")["pending"]?.int64Value, 9, "queued while logged out")

        try offline.login(daemon, token: token)
        XCTAssertEqual(try offline.sync().sent, 9)
        let alicesPhone = try machines("phone")[0]
        XCTAssertEqual(try alicesPhone.sync().received, 9)
        XCTAssertEqual(try alicesPhone.snapshot(), try offline.snapshot())
        XCTAssertEqual(try alicesPhone.json("match", "show", match)["players"]?.arrayValue?.map { $0["total"]?.doubleValue }, [12, 7])
        try assertStore(alicesPhone, equals: try ServerZone(daemon: daemon, token: token), "alice's phone")

        let bobsPhone = CLIMachine("bobs-phone")
        try bobsPhone.login(daemon, token: bobToken)
        XCTAssertEqual(try bobsPhone.sync().received, 0)
        XCTAssertEqual(try bobsPhone.json("person", "list"), [])
        XCTAssertEqual(try bobsPhone.json("match", "list"), [])
        XCTAssertEqual(try ServerZone(daemon: daemon, token: bobToken).records.count, 0, "nothing reached bob's account")
        // Now the data is alice's: bob may not take it over.
        XCTAssertNotEqual(try offline.run(["account", "login", "--server", daemon.baseURL.absoluteString, "--token", bobToken],
                                          allowFailure: true).status, 0)
    }

    func testALowScoreWinsGameCrownsTheLowestTotalAndKeepsTheFlagThroughSync() throws {
        let machines = try machines("laptop", "phone")
        let (laptop, phone) = (machines[0], machines[1])
        let golf = try laptop.json("game", "add", "Golf", "--low-score-wins")
        XCTAssertEqual(golf["lowScoreWins"], true)
        try laptop.run("game", "add", "Darts")
        let ann = try laptop.create("person", "add", "Ann")
        let bob = try laptop.create("person", "add", "Bob")
        let match = try laptop.create("match", "start", "--game", "Golf", "--players", "Ann,Bob")
        try laptop.run("score", "add", "--match", match, "--player", "Ann", "40", "--round", "1")
        try laptop.run("score", "add", "--match", match, "--player", "Bob", "36", "--round", "1")
        try laptop.run("score", "add", "--match", match, "--player", "Ann", "38", "--round", "2")
        try laptop.run("score", "add", "--match", match, "--player", "Bob", "45", "--round", "2")
        XCTAssertTrue(try laptop.json("match", "show", match)["winner"]?.isNull ?? false, "no winner while in progress")
        // The same totals in a high-score game go the other way.
        let darts = try laptop.create("match", "start", "--game", "Darts", "--players", "Ann,Bob")
        try laptop.run("score", "add", "--match", darts, "--player", "Ann", "78")
        try laptop.run("score", "add", "--match", darts, "--player", "Bob", "81")
        try laptop.run("match", "finish", darts)
        try laptop.run("match", "finish", match)

        let shown = try laptop.json("match", "show", match)
        XCTAssertEqual(shown["winner"], .string(ann), "78 beats 81 when the low score wins")
        XCTAssertEqual(shown["players"]?.arrayValue?.map { $0["person"]?.stringValue ?? "" }, [ann, bob])
        XCTAssertEqual(shown["players"]?.arrayValue?.map { $0["total"]?.doubleValue ?? .nan }, [78, 81])
        XCTAssertEqual(shown["players"]?.arrayValue?.map { $0["rank"]?.int64Value ?? 0 }, [1, 2])
        XCTAssertEqual(try laptop.json("match", "show", darts)["winner"], .string(bob))

        try laptop.sync()
        try phone.sync()
        let games = try XCTUnwrap(try phone.json("game", "list").arrayValue)
        XCTAssertEqual(games.first { $0["name"] == "Golf" }?["lowScoreWins"], true)
        XCTAssertEqual(games.first { $0["name"] == "Darts" }?["lowScoreWins"], false)
        XCTAssertEqual(try phone.json("match", "show", match)["winner"], .string(ann))
        XCTAssertEqual(try phone.json("match", "show", darts)["winner"], .string(bob))
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())
        let server = try ServerZone(daemon: daemon, token: token)
        let golfRecord = try XCTUnwrap(server.records.values.first { $0["fields"]?["name"]?["value"] == "Golf" })
        XCTAssertEqual(golfRecord["fields"]?["lowScoreWins"]?["value"]?.int64Value, 1, "INT64 1 on the server")
    }

    func testKillingTheCLIMidSyncLosesAndDuplicatesNothing() throws {
        let machines = try machines("laptop", "phone")
        let (laptop, phone) = (machines[0], machines[1])
        try laptop.run("game", "add", "Catan")
        var people: [String] = []
        for index in 0..<24 {
            try laptop.run("person", "add", "P\(index)")
            people.append("P\(index)")
        }
        // Two matches of 24 players: 75 records in all.
        for _ in 0..<2 { try laptop.run("match", "start", "--game", "Catan", "--players", people.joined(separator: ",")) }
        var killed = 0
        for delay in [0.05, 0.1, 0.15, 0.2, 0.3, 0.45] {
            let sync = try laptop.startSync()
            Thread.sleep(forTimeInterval: delay)
            if sync.process.isRunning { killed += 1 }
            sync.kill()
            try laptop.run("person", "add", "Late\(Int(delay * 100))")
        }
        try laptop.sync()
        XCTAssertEqual(try laptop.json("status")["pending"]?.int64Value, 0)
        try phone.sync()
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())
        let server = try ServerZone(daemon: daemon, token: token)
        XCTAssertEqual(server.names(ofType: "Person").count, 30, "24 people and 6 added between kills, none twice")
        XCTAssertEqual(server.names(ofType: "Player").count, 48)
        XCTAssertEqual(server.orphans, [])
        try assertStore(phone, equals: server, "phone")
        print("killed \(killed) of 6 syncs while running")
    }

    func testASecondAccountNeverReceivesTheFirstOnesRecords() throws {
        let bobToken = try daemon.createUser("bob")
        let laptop = try machines("laptop")[0]
        _ = try recordMatch(on: laptop)
        try laptop.sync()

        let refused = try laptop.run(["account", "login", "--server", daemon.baseURL.absoluteString, "--token", bobToken],
                                     allowFailure: true)
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("--delete-local"), refused.stderr)
        XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1)

        let bobsPhone = CLIMachine("bobs-phone")
        try bobsPhone.login(daemon, token: bobToken)
        XCTAssertEqual(try bobsPhone.sync().received, 0)
        XCTAssertEqual(try ServerZone(daemon: daemon, token: bobToken).records.count, 0)

        try laptop.run("account", "logout", "--delete-local")
        XCTAssertEqual(try laptop.json("person", "list"), [])
        try laptop.login(daemon, token: bobToken)
        try laptop.run("game", "add", "Go")
        try laptop.sync()
        XCTAssertEqual(try bobsPhone.sync().received, 1)
        XCTAssertEqual(try bobsPhone.json("game", "list").arrayValue?.compactMap { $0["name"]?.stringValue }, ["Go"])
        XCTAssertEqual(try ServerZone(daemon: daemon, token: token).names(ofType: "Person").count, 2, "alice's data is untouched")
    }

    /// One game, 40 people and 12 matches of all 40: 533 records, in 53 runs of the CLI.
    func recordManyMatches(on machine: CLIMachine) throws -> Int {
        try machine.run("game", "add", "Catan")
        var people: [String] = []
        for index in 0..<40 { people.append(try machine.create("person", "add", "P\(index)")) }
        for _ in 0..<12 { try machine.run("match", "start", "--game", "Catan", "--players", people.joined(separator: ",")) }
        return 1 + 40 + 12 * 41
    }

    /// `SCOREBOOK_PROGRESS=always` stands in for a terminal, `SCOREBOOK_PROGRESS_AFTER_MS=0` for
    /// a sync of more than a second.
    static let forcedProgress = ["SCOREBOOK_PROGRESS": "always", "SCOREBOOK_PROGRESS_AFTER_MS": "0"]

    func testALongSyncDrawsAProgressBarOnStandardErrorAndErasesIt() throws {
        let machines = try machines("laptop", "phone")
        let (laptop, phone) = (machines[0], machines[1])
        let count = try recordManyMatches(on: laptop)

        let send = try laptop.run(["sync", "--json"], environment: Self.forcedProgress)
        let summary = try JSONValue.parse(send.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(summary["sent"]?["saved"]?.int64Value, Int64(count), "standard output is the JSON summary alone")
        // Batches of at most 400: the bar at 0, 400 and 533 of 533, redrawn in place.
        XCTAssertTrue(send.stderr.contains("\rsyncing [..............................] 0/533 records"), send.stderr.debugDescription)
        XCTAssertTrue(send.stderr.contains("\rsyncing [######################........] 400/533 records"), send.stderr.debugDescription)
        XCTAssertTrue(send.stderr.contains("\rsyncing [##############################] 533/533 records"), send.stderr.debugDescription)
        XCTAssertFalse(send.stderr.contains("\n"), "the bar never takes a line of its own")
        XCTAssertTrue(send.stderr.hasSuffix("\r"), "the last thing on standard error erases the bar")
        let lastDraw = try XCTUnwrap(send.stderr.components(separatedBy: "\r").dropLast().last)
        XCTAssertTrue(lastDraw.allSatisfy { $0 == " " } && !lastDraw.isEmpty, "erased with blanks: \(lastDraw.debugDescription)")

        // Fetching: the total is unknown, so a spinner and the count received.
        let fetch = try phone.run(["sync"], environment: Self.forcedProgress)
        XCTAssertTrue(fetch.stderr.contains("fetched 533 records"), fetch.stderr.debugDescription)
        XCTAssertTrue(fetch.stderr.hasSuffix("\r"))
        XCTAssertEqual(fetch.lines.count, 1, "the one-line summary, on standard output: \(fetch.stdout)")
        XCTAssertFalse(fetch.stdout.contains("syncing"))
        try assertStore(phone, equals: try ServerZone(daemon: daemon, token: token), "phone")

        // Standard error is a pipe here, not a terminal: no bar without the variable.
        try laptop.run("person", "add", "Late")
        let plain = try laptop.run("sync")
        XCTAssertEqual(plain.stderr, "")
        XCTAssertEqual(plain.lines.count, 1)
        XCTAssertEqual(try laptop.run(["sync"], environment: ["SCOREBOOK_PROGRESS_AFTER_MS": "0"]).stderr, "")
        // Forced on, but the default delay of a second: this short sync shows nothing.
        try laptop.run("person", "add", "Later")
        XCTAssertEqual(try laptop.run(["sync"], environment: ["SCOREBOOK_PROGRESS": "always"]).stderr, "")
    }

    func testTheInitialSyncOfWatchShowsProgressWithoutDisturbingItsOutput() throws {
        let machines = try machines("laptop", "phone")
        let (laptop, phone) = (machines[0], machines[1])
        let count = try recordManyMatches(on: laptop)
        try laptop.sync()
        let watch = try BackgroundCLI(["--store", phone.storePath, "sync", "--watch", "--for", "3", "--json"],
                                      environment: Self.forcedProgress)
        XCTAssertTrue(watch.wait(timeout: 60))
        XCTAssertEqual(watch.process.terminationStatus, 0, watch.stderr.text)
        XCTAssertEqual(watch.lines.count, count, "one line per applied change")
        XCTAssertEqual(try watch.lines.map { try JSONValue.parse($0)["event"] }, Array(repeating: "saved", count: count))
        XCTAssertTrue(watch.stderr.text.contains("fetched"), watch.stderr.text.debugDescription)
        XCTAssertTrue(watch.stderr.text.hasSuffix("\r"), "erased after the initial sync")
        XCTAssertFalse(watch.stderr.text.contains("\n"))
    }

    func testStatusAndAccountReportTheSyncState() throws {
        let laptop = CLIMachine("laptop")
        let before = try laptop.json("status")
        XCTAssertTrue(before["account"]?.isNull ?? false)
        XCTAssertTrue(before["lastSync"]?.isNull ?? false)
        try laptop.login(daemon, token: token)
        try laptop.run("sync", "disable")
        let disabled = try laptop.run(["sync"], allowFailure: true)
        XCTAssertNotEqual(disabled.status, 0)
        XCTAssertTrue(disabled.stderr.contains("sync enable"), disabled.stderr)
        try laptop.run("sync", "enable")
        try laptop.sync()
        let after = try laptop.json("status")
        XCTAssertEqual(after["syncEnabled"], true)
        XCTAssertNotNil(after["lastSync"]?.stringValue)
        XCTAssertEqual(after["account"]?["server"]?.stringValue, daemon.baseURL.absoluteString)
        XCTAssertEqual(try laptop.json("account", "status")["loggedIn"], true)
    }
}
