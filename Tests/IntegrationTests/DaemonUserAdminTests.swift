import Foundation
import RecordModel
import SQLiteDB
import XCTest

/// `scorebookd user list | edit | delete` and expiring tokens through the real binaries, on the
/// embedded store here and on PostgreSQL in `PostgresDaemonTests` (the same scenario).
final class DaemonUserAdminTests: XCTestCase {
    func testUsersAreListedEditedAndDeletedAndTokensExpire() throws {
        let daemon = try DaemonProcess.start()
        let scratch = DaemonProcess.makeTemporaryDirectory(prefix: "user-admin")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let file = daemon.dataDirectory.appendingPathComponent("scorebook.sqlite").path
        try assertUserAdministration(daemon, scratch: scratch) { token in
            try SQLiteConnection(path: file).execute("UPDATE auth_tokens SET expires_at = 1000 WHERE token_hash = '\(SHA256Hasher.hex(SHA256Hasher.digest(Array(token.utf8))))'")
        }
        try daemon.stop()
    }

    func testExpiresInMustBeAPositiveNumberOfDays() throws {
        let daemon = try DaemonProcess.start()
        _ = try daemon.createUserInfo("ann")
        for days in ["0", "-1", "soon", "40000"] {
            let result = try DaemonProcess.run("scorebookd", ["user", "token", "ann", "--expires-in", days] + daemon.storeArguments)
            XCTAssertNotEqual(result.status, 0, days)
            assertOneLine(result.stderr, "--expires-in \(days)")
            XCTAssertEqual(result.stdout, "", days)
        }
        try daemon.stop()
    }
}

extension XCTestCase {
    /// The whole administration of users on `daemon`'s store; `expire` makes a token's expiry
    /// lie in the past (the tests cannot wait a day).
    func assertUserAdministration(_ daemon: DaemonProcess, scratch: URL, expire: (String) throws -> Void,
                                  file: StaticString = #filePath, line: UInt = #line) throws
    {
        let store = try PopulatedStore(daemon, scratch: scratch)
        func status(_ token: String) throws -> (Int, JSONValue) {
            let answer = try APIClient(daemon: daemon, token: token).call("users/current", [:])
            return (answer.status, answer.body)
        }
        func listed() throws -> [String: JSONValue] {
            let users = try administer(daemon, ["user", "list", "--json"], file: file, line: line).arrayValue ?? []
            return Dictionary(uniqueKeysWithValues: users.compactMap { user in user["name"]?.stringValue.map { ($0, user) } })
        }

        // The table and its JSON: both users, their emails, one live token each, used by their syncs.
        let table = try DaemonProcess.run("scorebookd", ["user", "list"] + daemon.storeArguments)
        XCTAssertEqual(table.status, 0, table.stderr, file: file, line: line)
        let rows = table.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        XCTAssertEqual(rows.first, "NAME EMAIL LIVE TOKENS LAST USED", file: file, line: line)
        XCTAssertEqual(rows.dropFirst().map { $0.split(separator: " ").first ?? "" }.filter { !$0.hasPrefix("key-") }, ["alice", "bob"],
                       file: file, line: line)
        XCTAssertTrue(rows.count > 1 && rows[1].hasPrefix("alice alice@example.com 1 20"), "a last use in ISO 8601: \(rows)", file: file, line: line)
        var users = try listed()
        XCTAssertEqual(users["alice"]?["userRecordName"]?.stringValue, store.aliceRecordName, file: file, line: line)
        XCTAssertEqual(users["alice"]?["email"], "alice@example.com", file: file, line: line)
        XCTAssertEqual(users["alice"]?["liveTokens"], 1, file: file, line: line)
        XCTAssertNotNil(users["bob"]?["lastUsed"]?.stringValue.flatMap { ISO8601DateFormatter().date(from: $0) }, "\(users)", file: file, line: line)

        // A token that expires works until it does, and then says so.
        let expiring = try XCTUnwrap(try administer(daemon, ["user", "token", "alice", "--expires-in", "1"])["token"]?.stringValue)
        XCTAssertEqual(try listed()["alice"]?["liveTokens"], 2, file: file, line: line)
        try expire(expiring)
        let refused = try status(expiring)
        XCTAssertEqual(refused.0, 401, file: file, line: line)
        XCTAssertEqual(refused.1["serverErrorCode"], "AUTHENTICATION_FAILED", file: file, line: line)
        XCTAssertTrue(refused.1["reason"]?.stringValue?.contains("token expired") ?? false, "\(refused.1)", file: file, line: line)
        XCTAssertEqual(try listed()["alice"]?["liveTokens"], 1, "an expired token is not live", file: file, line: line)
        let carol = try XCTUnwrap(try administer(daemon, ["user", "create", "carol", "--expires-in", "0.5"])["token"]?.stringValue)
        XCTAssertEqual(try status(carol).0, 200, "half a day is ahead", file: file, line: line)

        // Edit: a new email; another user's is refused in one line.
        let edited = try administer(daemon, ["user", "edit", "bob", "--email", "Robert@Example.com"])
        XCTAssertEqual(edited["email"], "robert@example.com", file: file, line: line)
        XCTAssertEqual(try listed()["bob"]?["email"], "robert@example.com", file: file, line: line)
        let taken = try DaemonProcess.run("scorebookd", ["user", "edit", "bob", "--email", "alice@example.com"] + daemon.storeArguments)
        XCTAssertEqual(taken.status, 1, file: file, line: line)
        assertOneLine(taken.stderr, "an email another user has", file: file, line: line)

        // Delete: refused without --yes; with it, alice's tokens, data and share are gone, and bob
        // loses her book at his next sync.
        let unconfirmed = try DaemonProcess.run("scorebookd", ["user", "delete", "alice"] + daemon.storeArguments)
        XCTAssertEqual(unconfirmed.status, 1, file: file, line: line)
        assertOneLine(unconfirmed.stderr, "delete without --yes", file: file, line: line)
        XCTAssertTrue(unconfirmed.stderr.contains("--yes"), unconfirmed.stderr, file: file, line: line)
        XCTAssertEqual(try status(store.aliceToken).0, 200, "nothing was deleted", file: file, line: line)
        XCTAssertEqual(Set(try PopulatedStore.books(store.bob)), ["ScorebookData", "friday"], file: file, line: line)

        let deleted = try administer(daemon, ["user", "delete", "alice", "--yes"])
        XCTAssertEqual(deleted["userRecordName"]?.stringValue, store.aliceRecordName, file: file, line: line)
        XCTAssertEqual(deleted["shares"], 1, file: file, line: line)
        XCTAssertEqual(try status(store.aliceToken).0, 401, "her token is refused at once", file: file, line: line)
        XCTAssertEqual(try PopulatedStore.books(store.bob), ["ScorebookData"], "bob lost the book at his sync", file: file, line: line)
        users = try listed()
        XCTAssertEqual(Set(users.keys.filter { !$0.hasPrefix("key-") }), ["bob", "carol"], file: file, line: line)
        XCTAssertEqual(try administer(daemon, ["check"])["ok"], true, "nothing of hers is left half-deleted", file: file, line: line)
        let again = try DaemonProcess.run("scorebookd", ["user", "delete", "alice", "--yes"] + daemon.storeArguments)
        XCTAssertEqual(again.status, 1, file: file, line: line)
        assertOneLine(again.stderr, "deleting an unknown user", file: file, line: line)
        // The name is free again, for a new user with nothing of the old one's.
        let newAlice = try daemon.createUserInfo("alice", email: "alice@example.com")
        XCTAssertNotEqual(newAlice.userRecordName, store.aliceRecordName, file: file, line: line)
        var client = APIClient(daemon: daemon, token: newAlice.token)
        (client.container, client.environment) = ("iCloud.scorebook", "production")
        let zones = try client.ok("zones/list", [:])
        XCTAssertEqual(zones["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue }, ["_defaultZone"], file: file, line: line)
    }
}
