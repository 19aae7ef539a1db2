import Foundation
import RecordModel
import TestSupport
import XCTest

/// The daemon on PostgreSQL through the real binaries: `scorebookd serve --database postgres://…` on a
/// fresh database of the run's throw-away PostgreSQL cluster, the administrative commands on
/// `--database`, and the real `scorebook` CLI syncing through it (and through two daemons on one
/// database).
final class PostgresDaemonTests: XCTestCase {
    var databaseURL: String!

    override func setUpWithError() throws {
        if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
        databaseURL = try PostgresTestCluster.shared().createDatabase()
    }

    func recordMatch(on machine: CLIMachine) throws -> String {
        try machine.run("person", "add", "Ann", "Lee")
        try machine.run("person", "add", "Bob")
        try machine.run("game", "add", "Catan")
        let match = try machine.create("match", "start", "--game", "Catan", "--players", "Ann,Bob")
        try machine.run("score", "add", "--match", match, "--player", "Ann", "10")
        try machine.run("score", "add", "--match", match, "--player", "Bob", "7")
        try machine.run("match", "finish", match)
        return match
    }

    func testTheCLISyncsThroughAScorebookdOnPostgreSQL() throws {
        let daemon = try DaemonProcess.start(postgresURL: databaseURL)
        defer { XCTAssertNoThrow(try daemon.stop(), "SIGTERM: a clean exit 0") }
        let token = try daemon.createUser("alice")
        let laptop = CLIMachine("laptop"), phone = CLIMachine("phone")
        try laptop.login(daemon, token: token)
        try phone.login(daemon, token: token)
        let match = try recordMatch(on: laptop)
        XCTAssertEqual(try laptop.sync().sent, 8)
        XCTAssertEqual(try phone.sync().received, 8)
        XCTAssertEqual(try phone.run("match", "show", match).stdout, try laptop.run("match", "show", match).stdout)
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())

        // A deletion cascades on the server and reaches the other machine.
        try phone.run("game", "delete", "Catan", "--yes")
        XCTAssertEqual(try phone.sync().sent, 1)
        XCTAssertEqual(try laptop.sync().received, 6, "the game, its match, 2 players and 2 scores")
        XCTAssertEqual(try laptop.json("match", "list"), [])
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())
    }

    func testAdministrativeCommandsWorkOnTheDatabaseWhileADaemonServesIt() throws {
        let daemon = try DaemonProcess.start(postgresURL: databaseURL)
        defer { XCTAssertNoThrow(try daemon.stop()) }
        let alice = try daemon.createUserInfo("alice")
        let listed = try DaemonProcess.run("scorebookd", ["user", "list", "--json", "--database", databaseURL])
        XCTAssertEqual(listed.status, 0, listed.stderr)
        XCTAssertEqual(try JSONValue.parse(listed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)),
                       [["userRecordName": .string(alice.userRecordName), "name": "alice", "email": nil, "liveTokens": 1, "lastUsed": nil]])
        // A second token made by the command authenticates at once on the serving daemon.
        let second = try DaemonProcess.run("scorebookd", ["user", "token", "alice", "--database", databaseURL])
        XCTAssertEqual(second.status, 0, second.stderr)
        let token = try XCTUnwrap(try JSONValue.parse(second.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["token"]?.stringValue)
        XCTAssertNotEqual(token, alice.token)
        let zones = try daemon.post("/database/1/iCloud.scorebook.tests/development/private/zones/list", token: token, json: "{}")
        XCTAssertEqual(zones.status, 200)
        let apiToken = try daemon.createAPIToken()
        XCTAssertEqual(apiToken.count, 64)
        // The environment variable names the store as --database does.
        let check = try DaemonProcess.runWithEnvironment("scorebookd", ["check"], environment: ["SCOREBOOK_DATABASE_URL": databaseURL])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertEqual(try JSONValue.parse(check.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["ok"], true)
        // `user revoke --token` refuses that token on the serving daemon from its next request; the other still works.
        let revoked = try DaemonProcess.run("scorebookd", ["user", "revoke", "alice", "--token", token, "--database", databaseURL])
        XCTAssertEqual(revoked.status, 0, revoked.stderr)
        XCTAssertEqual(try JSONValue.parse(revoked.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["revoked"], 1)
        XCTAssertEqual(try daemon.post("/database/1/iCloud.scorebook.tests/development/private/zones/list", token: token, json: "{}").status, 401)
        XCTAssertEqual(try daemon.post("/database/1/iCloud.scorebook.tests/development/private/zones/list", token: alice.token, json: "{}").status, 200)
    }

    func testCheckPassesOnAStoreWithSharesAssetsPublicRecordsAndServerKeys() throws {
        try assertCheckPassesOnAPopulatedStore(try DaemonProcess.start(postgresURL: databaseURL))
    }

    func testForwardedHeadersCountFromATrustedProxy() throws {
        try assertForwardedHeadersCountFromATrustedProxy(try DaemonProcess.start(postgresURL: databaseURL,
                                                                                 extraArguments: DaemonRequestLogTests.behindAProxy))
    }

    func testUsersAreListedEditedAndDeletedAndTokensExpire() throws {
        let daemon = try DaemonProcess.start(postgresURL: databaseURL)
        let scratch = DaemonProcess.makeTemporaryDirectory(prefix: "user-admin-pg")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let database = String(databaseURL.split(separator: "/").last ?? "")
        try assertUserAdministration(daemon, scratch: scratch) { token in
            try PostgresTestCluster.shared().psql("UPDATE auth_tokens SET expires_at = 1000 WHERE token_hash = '\(SHA256Hasher.hex(SHA256Hasher.digest(Array(token.utf8))))'",
                                                  database: database)
        }
        try daemon.stop()
    }

    func testWebSignInWithAPasswordSetOnTheDatabase() throws {
        let daemon = try DaemonProcess.start(postgresURL: databaseURL)
        defer { XCTAssertNoThrow(try daemon.stop(), "SIGTERM: a clean exit 0") }
        let alice = try daemon.createUserInfo("alice", email: "alice@example.com")
        let set = try daemon.setPassword("alice", input: "alice's web password\n")
        XCTAssertEqual(set.status, 0, set.stderr)
        let own = daemon.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        XCTAssertEqual(try daemon.signIn("alice", "wrong password", container: "iCloud.scorebook", origin: own).status, 401)
        let answer = try daemon.signIn("ALICE@example.com", "alice's web password", container: "iCloud.scorebook", origin: own)
        let handed = try XCTUnwrap(DaemonProcess.handOff(answer), answer.text)
        XCTAssertEqual(handed.origin, own)
        let current = try daemon.get("/database/1/iCloud.scorebook/production/private/users/current", token: handed.token)
        XCTAssertEqual(current.body["userRecordName"]?.stringValue, alice.userRecordName)
    }

    func testCommandsOtherThanServeRefuseADatabaseWithoutAStore() throws {
        let result = try DaemonProcess.run("scorebookd", ["user", "list", "--database", databaseURL])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("holds no scorebook store"), result.stderr)
        let malformed = try DaemonProcess.run("scorebookd", ["user", "list", "--database", "mysql://nowhere"])
        XCTAssertNotEqual(malformed.status, 0)
        XCTAssertEqual(malformed.stderr.split(separator: "\n").count, 1, malformed.stderr)
    }

    /// Two daemons on one database behind no load balancer at all: each machine talks to its own
    /// daemon, and both converge on the same scorebook.
    func testMachinesOnTwoDaemonsOfOneDatabaseConverge() throws {
        let first = try DaemonProcess.start(postgresURL: databaseURL)
        defer { XCTAssertNoThrow(try first.stop()) }
        let second = try DaemonProcess.start(postgresURL: databaseURL)
        defer { XCTAssertNoThrow(try second.stop()) }
        let token = try first.createUser("alice")
        let laptop = CLIMachine("laptop"), phone = CLIMachine("phone")
        try laptop.login(first, token: token)
        try phone.login(second, token: token)
        _ = try recordMatch(on: laptop)
        try phone.run("person", "add", "Cy")
        try laptop.sync()
        try phone.sync()
        try laptop.sync()
        XCTAssertEqual(try laptop.json("person", "list").arrayValue?.count, 3)
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())
    }

    /// `scorebookd migrate`: a machine that synced through a daemon on SQLite keeps syncing, with
    /// its token and its saved sync state, through a daemon on PostgreSQL on the same address.
    func testMigrateCopiesAnSQLiteStoreAndClientsKeepSyncing() throws {
        let old = try DaemonProcess.start()
        let token = try old.createUser("alice")
        let laptop = CLIMachine("laptop")
        try laptop.login(old, token: token)
        _ = try recordMatch(on: laptop)
        XCTAssertEqual(try laptop.sync().sent, 8)
        let port = old.port
        try old.stop()

        let missing = try DaemonProcess.run("scorebookd", ["migrate", "--from-data-dir", "/nonexistent/scorebook", "--database", databaseURL])
        XCTAssertEqual(missing.status, 1)
        XCTAssertEqual(missing.stderr.split(separator: "\n").count, 1, missing.stderr)

        let migrated = try DaemonProcess.run("scorebookd", ["migrate", "--from-data-dir", old.dataDirectory.path, "--database", databaseURL])
        XCTAssertEqual(migrated.status, 0, migrated.stderr)
        let counts = try JSONValue.parse(migrated.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["migrated"]
        XCTAssertEqual(counts?["users"], 1)
        XCTAssertEqual(counts?["records"], 8)

        var daemon: DaemonProcess?
        for _ in 0..<10 where daemon == nil {
            daemon = try? DaemonProcess.start(postgresURL: databaseURL, extraArguments: ["--port", String(port)])
            if daemon == nil { Thread.sleep(forTimeInterval: 0.5) }
        }
        let serving = try XCTUnwrap(daemon, "a daemon on PostgreSQL on the old port")
        defer { XCTAssertNoThrow(try serving.stop()) }
        try laptop.run("person", "add", "Dee")  // the match is finished: a new person is the edit
        let resumed = try laptop.sync()
        XCTAssertEqual(resumed.sent, 1, "the laptop's saved state and token still hold")
        XCTAssertLessThanOrEqual(resumed.received, 1, "nothing is fetched again: its sync token is valid on the new store")
        let phone = CLIMachine("phone")
        try phone.login(serving, token: token)
        XCTAssertEqual(try phone.sync().received, 9)
        XCTAssertEqual(try phone.snapshot(), try laptop.snapshot())

        let again = try DaemonProcess.run("scorebookd", ["migrate", "--from-data-dir", old.dataDirectory.path, "--database", databaseURL])
        XCTAssertEqual(again.status, 1, "a database that already holds a store is refused")
        XCTAssertEqual(again.stderr.split(separator: "\n").count, 1, again.stderr)
    }

    /// Per-user rate limits hold across daemons: with two daemons serving the database, each
    /// grants a user half the configured burst (`--rate-limit 10`: bursts of 20 in all, 10 each).
    func testTwoDaemonsShareOneUsersRateLimit() throws {
        let first = try DaemonProcess.start(postgresURL: databaseURL, extraArguments: ["--rate-limit", "10"])
        defer { first.kill() }
        let token = try first.createUser("alice")
        let zones = "/database/1/iCloud.scorebook.tests/development/private/zones/list"
        func burst(_ daemon: DaemonProcess, _ count: Int) throws -> Int {
            var accepted = 0
            for _ in 0..<count where try daemon.get(zones, token: token).status == 200 { accepted += 1 }
            return accepted
        }
        XCTAssertGreaterThanOrEqual(try burst(first, 18), 18, "alone, a daemon grants the whole burst of 20")
        let second = try DaemonProcess.start(postgresURL: databaseURL, extraArguments: ["--rate-limit", "10"])
        defer { second.kill() }
        // Both daemons see each other within one heartbeat (5 s); then the buckets refill.
        Thread.sleep(forTimeInterval: 7)
        let started = Date()
        let accepted = try burst(first, 25)
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertLessThanOrEqual(Double(accepted), 10 + 5 * elapsed + 1, "a daemon grants half the burst and half the rate")
        XCTAssertGreaterThanOrEqual(accepted, 9)
    }

    /// Sharing across two daemons on one PostgreSQL database: users made with `user create --email`
    /// on `--database`; alice shares on one daemon, bob accepts and writes on the other, and
    /// alice's removal of bob stops his very next request there (access is checked in the
    /// database's transaction, not in a daemon's memory).
    func testSharingAcrossTwoDaemonsOnOneDatabase() throws {
        let first = try DaemonProcess.start(postgresURL: databaseURL)
        defer { XCTAssertNoThrow(try first.stop()) }
        let second = try DaemonProcess.start(postgresURL: databaseURL)
        defer { XCTAssertNoThrow(try second.stop()) }
        let alice = try first.createUserInfo("alice", email: "alice@example.com")
        let bob = try first.createUserInfo("bob", email: "bob@example.com")
        func call(_ daemon: DaemonProcess, _ token: String, _ database: String, _ operation: String, _ body: JSONValue) throws
            -> (status: Int, body: JSONValue)
        {
            try daemon.post("/database/1/iCloud.scorebook.tests/development/\(database)/\(operation)", token: token, json: body.serializedString())
        }
        let zone: JSONValue = ["zoneName": "Friday"]
        let sharedZone: JSONValue = ["zoneName": "Friday", "ownerRecordName": .string(alice.userRecordName)]
        XCTAssertEqual(try call(first, alice.token, "private", "zones/modify",
                                ["operations": [["operationType": "create", "zone": ["zoneID": zone]]]]).status, 200)
        func share(_ participants: [JSONValue], tag: String?) -> JSONValue {
            var record: [String: JSONValue] = ["recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "participants": .array(participants)]
            if let tag { record["recordChangeTag"] = .string(tag) }
            return ["zoneID": zone, "operations": [["operationType": tag == nil ? "create" : "update", "record": .object(record)]]]
        }
        let bobInvited: JSONValue = ["type": "USER", "permission": "READ_WRITE", "userIdentity": ["lookupInfo": ["emailAddress": "bob@example.com"]]]
        let saved = try call(first, alice.token, "private", "records/modify", share([bobInvited], tag: nil)).body["records"]?.arrayValue?.first
        let guid = try XCTUnwrap(saved?["shortGUID"]?.stringValue, "\(String(describing: saved))")
        XCTAssertEqual(try call(second, bob.token, "shared", "invitations/list", [:]).body["invitations"]?.arrayValue?.count, 1)
        let accepted = try call(second, bob.token, "public", "records/accept", ["shortGUIDs": [["value": .string(guid)]]])
        XCTAssertEqual(accepted.body["results"]?.arrayValue?.first?["participantStatus"], "ACCEPTED", "\(accepted.body)")
        let wrote = try call(second, bob.token, "shared", "records/modify", [
            "zoneID": sharedZone, "operations": [["operationType": "create", "record": ["recordName": "g1", "recordType": "Game",
                                                                                          "fields": ["name": ["value": "Bob's"]]]]],
        ])
        XCTAssertEqual(wrote.body["records"]?.arrayValue?.first?["created"]?["userRecordName"]?.stringValue, bob.userRecordName, "\(wrote.body)")
        let seen = try call(first, alice.token, "private", "records/lookup", ["zoneID": zone, "records": [["recordName": "g1"]]])
        XCTAssertEqual(seen.body["records"]?.arrayValue?.first?["modified"]?["userRecordName"]?.stringValue, bob.userRecordName)

        // Bob's long-poll on the second daemon is woken by alice's write on the first (LISTEN/NOTIFY
        // names bob's outbox too).
        XCTAssertEqual(try call(second, bob.token, "shared", "subscriptions/modify", ["operations": [["operationType": "create", "subscription": [
            "subscriptionID": "zone", "subscriptionType": "zone", "zoneID": sharedZone]]]]).status, 200)
        let channel = try second.post("/database/1/iCloud.scorebook.tests/development/tokens/create", token: bob.token,
                                      json: #"{"apnsEnvironment":"development"}"#)
        let courier = try XCTUnwrap(URL(string: try XCTUnwrap(channel.body["webcourierURL"]?.stringValue))?.path)
        let cursor = try XCTUnwrap(second.request("GET", courier + "?since=&timeout=0", token: bob.token).parsed().body["cursor"]?.stringValue)
        let since = cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? cursor
        let done = DispatchSemaphore(value: 0)
        let result = LockedResult()
        let port = second.port, bobToken = bob.token
        Thread {
            let started = Date()
            let answer = try? RawHTTP.send(port: port, method: "GET", path: courier + "?since=\(since)&timeout=30",
                                           headers: [("Authorization", "Bearer \(bobToken)")], body: [], timeout: 40).parsed()
            result.set(answer?.body, Date().timeIntervalSince(started))
            done.signal()
        }.start()
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(try call(first, alice.token, "private", "records/modify", ["zoneID": zone, "operations": [
            ["operationType": "create", "record": ["recordName": "a1", "recordType": "Game", "fields": ["name": ["value": "Alice's"]]]]]]).status, 200)
        XCTAssertEqual(done.wait(timeout: .now() + 40), .success)
        let (woken, elapsed) = result.get()
        XCTAssertLessThan(elapsed, 10, "woken across daemons, not by the timeout")
        XCTAssertEqual(woken?["notifications"]?.arrayValue?.first?["ck"]?["fet"]?["dbs"], 3, "\(String(describing: woken))")

        let tag = try XCTUnwrap(call(first, alice.token, "private", "records/lookup", ["zoneID": zone, "records": [["recordName": "cloudkit.zoneshare"]]])
            .body["records"]?.arrayValue?.first?["recordChangeTag"]?.stringValue)
        XCTAssertEqual(try call(first, alice.token, "private", "records/modify", share([], tag: tag)).status, 200)
        let refused = try call(second, bob.token, "shared", "records/lookup", ["zoneID": sharedZone, "records": [["recordName": "g1"]]])
        XCTAssertEqual(refused.status, 404)
        XCTAssertEqual(refused.body["serverErrorCode"], "ZONE_NOT_FOUND")
    }

    /// `migrate` keeps shares: a participant of a zone shared on SQLite keeps its access, and
    /// users keep the email they are found by, on PostgreSQL.
    func testMigrateKeepsSharesAndUsersEmails() throws {
        let old = try DaemonProcess.start()
        let alice = try old.createUserInfo("alice", email: "alice@example.com")
        let bob = try old.createUserInfo("bob", email: "bob@example.com")
        // An endpoint nobody answers (loopback, refused without --allow-private-webhooks): its events stay pending.
        let added = try DaemonProcess.run("scorebookd", ["webhook", "add", "http://127.0.0.1:1/closed"] + old.storeArguments)
        XCTAssertEqual(added.status, 0, added.stderr)
        func call(_ daemon: DaemonProcess, _ token: String, _ database: String, _ operation: String, _ body: JSONValue) throws -> JSONValue {
            try daemon.post("/database/1/iCloud.scorebook.tests/development/\(database)/\(operation)", token: token, json: body.serializedString()).body
        }
        _ = try call(old, alice.token, "private", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Friday"]]]]])
        let saved = try call(old, alice.token, "private", "records/modify", ["zoneID": ["zoneName": "Friday"], "operations": [
            ["operationType": "create", "record": ["recordName": "g1", "recordType": "Game", "fields": ["name": ["value": "Catan"]]]],
            ["operationType": "create", "record": ["recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "participants": [
                ["type": "USER", "permission": "READ_ONLY", "userIdentity": ["lookupInfo": ["emailAddress": "bob@example.com"]]]]]],
        ]])
        let guid = try XCTUnwrap(saved["records"]?.arrayValue?.last?["shortGUID"]?.stringValue, "\(saved)")
        _ = try call(old, bob.token, "public", "records/accept", ["shortGUIDs": [["value": .string(guid)]]])
        try old.stop()
        func webhooks(_ store: [String]) throws -> JSONValue {
            let listed = try DaemonProcess.run("scorebookd", ["webhook", "list", "--json"] + store)
            XCTAssertEqual(listed.status, 0, listed.stderr)
            return try JSONValue.parse(listed.stdout)
        }
        let pendingBefore = try webhooks(old.storeArguments)
        XCTAssertGreaterThanOrEqual(pendingBefore.arrayValue?.first?["pending"]?.int64Value ?? 0, 2, "\(pendingBefore)")
        let migrated = try DaemonProcess.run("scorebookd", ["migrate", "--from-data-dir", old.dataDirectory.path, "--database", databaseURL])
        XCTAssertEqual(migrated.status, 0, migrated.stderr)
        XCTAssertEqual(try webhooks(["--database", databaseURL]), pendingBefore, "the endpoint goes on from where it was")

        let daemon = try DaemonProcess.start(postgresURL: databaseURL)
        defer { XCTAssertNoThrow(try daemon.stop()) }
        let sharedZone: JSONValue = ["zoneName": "Friday", "ownerRecordName": .string(alice.userRecordName)]
        let seen = try call(daemon, bob.token, "shared", "records/lookup", ["zoneID": sharedZone, "records": [["recordName": "g1"]]])
        XCTAssertEqual(seen["records"]?.arrayValue?.first?["fields"]?["name"]?["value"], "Catan", "\(seen)")
        let share = try call(daemon, bob.token, "shared", "records/lookup", ["zoneID": sharedZone, "records": [["recordName": "cloudkit.zoneshare"]]])
        XCTAssertEqual(share["records"]?.arrayValue?.first?["shortGUID"]?.stringValue, guid)
        let found = try call(daemon, alice.token, "public", "users/discover", ["lookupInfos": [["emailAddress": "bob@example.com"]]])
        XCTAssertEqual(found["users"]?.arrayValue?.first?["userRecordName"]?.stringValue, bob.userRecordName)
        let refused = try daemon.post("/database/1/iCloud.scorebook.tests/development/shared/records/modify", token: bob.token,
                                      json: JSONValue.object(["zoneID": sharedZone, "operations": [["operationType": "create",
                                          "record": ["recordName": "g2", "recordType": "Game"]]]]).serializedString())
        XCTAssertEqual(refused.status, 403, "still read-only after the move")
    }
}
