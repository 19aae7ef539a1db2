import Foundation
import RecordModel
import SQLiteDB
import TestSupport
import XCTest

/// The courier URL as a capability, the way CloudKit JS uses it: long-polled bare (no
/// credentials), bound to its user and the token that made it, dead once that token is revoked or
/// after 30 days unused, and an unknown one no quicker to refuse than a live one is to answer empty. On SQLite here; on PostgreSQL below.
class BrowserCourierTests: PushTestCase {
    /// A courier long-poll without credentials: the status, the body and how long it took.
    func barePoll(_ courier: String, since: String? = nil, timeout: Int, headers: [(String, String)] = [])
        throws -> (status: Int, body: JSONValue, elapsed: TimeInterval)
    {
        let query = ["timeout=\(timeout)"] + (since.map { ["since=\(percentEncoded($0))"] } ?? [])
        let started = Date()
        let answer = try daemon.request("GET", "\(courier)?\(query.joined(separator: "&"))", headers: headers, timeout: 70).parsed()
        return (answer.status, answer.body, Date().timeIntervalSince(started))
    }

    func testTheCourierURLIsACapabilityBoundToItsUser() throws {
        try createZone(zone)
        try subscribe(querySubscription("games", type: "Game"))
        let courier = try createCourier()
        let empty = try barePoll(courier, since: "", timeout: 0)
        XCTAssertEqual(empty.status, 200, "polled without credentials, as CloudKit JS does: \(empty.body)")
        let start = try XCTUnwrap(empty.body["cursor"]?.stringValue)

        // A write wakes a bare long-poll.
        let game = newName("Game")
        try create(game, "Game", ["name": "Catan"])
        let woken = try barePoll(courier, since: start, timeout: 10)
        XCTAssertEqual(woken.status, 200)
        XCTAssertEqual(woken.body["notifications"]?.arrayValue?.first?["ck"]?["qry"]?["rid"]?.stringValue, game, "\(woken.body)")
        let seen = try XCTUnwrap(woken.body["cursor"]?.stringValue)

        // Another user: its own writes never reach this courier, and its credentials do not open it.
        let bob = try daemon.createUser("bob")
        try createZone(zone, token: bob)
        try subscribe(querySubscription("games", type: "Game"), token: bob)
        try create(newName("Game"), "Game", ["name": "Go"], token: bob)
        let quiet = try barePoll(courier, since: seen, timeout: 1)
        XCTAssertEqual(quiet.status, 200)
        XCTAssertEqual(quiet.body["notifications"]?.arrayValue?.count, 0, "bob's notification is not alice's: \(quiet.body)")
        XCTAssertGreaterThanOrEqual(quiet.elapsed, 0.9, "a live courier with nothing new waits out its timeout")
        let asBob = try daemon.request("GET", "\(courier)?timeout=0", token: bob).parsed()
        XCTAssertEqual(asBob.status, 403, "\(asBob.body)")
        XCTAssertNil(asBob.body["notifications"])
        // Its owner's credentials keep working.
        XCTAssertEqual(try poll(courier, since: seen, timeout: 0).notifications.count, 0)

        // An unknown courier: 404, and no sooner than the live one's empty answer.
        let unknown = courier.dropLast(4) + (courier.hasSuffix("0000") ? "1111" : "0000")
        let refused = try barePoll(String(unknown), timeout: 1)
        XCTAssertEqual(refused.status, 404, "\(refused.body)")
        XCTAssertEqual(refused.body["serverErrorCode"], "NOT_FOUND")
        XCTAssertGreaterThanOrEqual(refused.elapsed, 0.9, "an unknown courier is no oracle")

        // `user revoke` ends the courier with the user's tokens.
        let revoked = try DaemonProcess.run("scorebookd", ["user", "revoke", "alice"] + daemon.storeArguments)
        XCTAssertEqual(revoked.status, 0, revoked.stderr)
        let ended = try barePoll(courier, since: seen, timeout: 1)
        XCTAssertEqual(ended.status, 404, "\(ended.body)")
        XCTAssertGreaterThanOrEqual(ended.elapsed, 0.9)
    }

    /// CloudKit JS polls with neither `since` nor credentials and reads `body.ck`: each answer is
    /// one notification, bare, and the daemon keeps the courier's place (in the store: it outlives
    /// a restart), so the next poll gets the next one or waits; nothing is handed out twice.
    func testABarePollAnswersOneNotificationAtATimeAndKeepsItsPlace() throws {
        try createZone(zone)
        try subscribe(querySubscription("games", type: "Game"))
        let courier = try createCourier()
        let idle = try barePoll(courier, timeout: 0)
        XCTAssertEqual(idle.status, 200)
        XCTAssertEqual(idle.body, [:], "nothing yet: an empty object, not an envelope")

        let first = newName("Game"), second = newName("Game")
        try create(first, "Game", ["name": "Catan"])
        try create(second, "Game", ["name": "Go"])
        let one = try barePoll(courier, timeout: 10)
        XCTAssertEqual(one.body["ck"]?["qry"]?["rid"]?.stringValue, first, "the oldest first, bare: \(one.body)")
        XCTAssertNil(one.body["notifications"])
        XCTAssertNil(one.body["cursor"])
        let two = try barePoll(courier, timeout: 10)
        XCTAssertEqual(two.body["ck"]?["qry"]?["rid"]?.stringValue, second, "then the next, not the first again: \(two.body)")
        let none = try barePoll(courier, timeout: 1)
        XCTAssertEqual(none.body, [:], "both handed out: the next poll waits, then answers empty")
        XCTAssertGreaterThanOrEqual(none.elapsed, 0.9)

        // A waiting poll is answered by the next write.
        let third = newName("Game")
        let waiting = background { [client, courier] in
            try client.daemon.request("GET", "\(courier)?timeout=30", timeout: 40).parsed().body
        }
        Thread.sleep(forTimeInterval: 0.5)
        let written = Date()
        try create(third, "Game", ["name": "Chess"])
        let woken = try XCTUnwrap(waiting.wait(timeout: 20), "the waiting poll answered").get()
        XCTAssertEqual(woken["ck"]?["qry"]?["rid"]?.stringValue, third, "\(woken)")
        XCTAssertLessThan(Date().timeIntervalSince(written), 10, "woken by the write, not by its timeout")

        // The place is the store's: a restarted daemon does not hand out what was answered.
        try daemon.restart()
        XCTAssertEqual(try barePoll(courier, timeout: 0).body, [:], "nothing replayed after a restart")
        let fourth = newName("Game")
        try create(fourth, "Game", ["name": "Go"])
        XCTAssertEqual(try barePoll(courier, timeout: 10).body["ck"]?["qry"]?["rid"]?.stringValue, fourth)

        // Polls with a cursor keep the envelope, whatever the bare polls took.
        let all = try poll(courier, since: "", timeout: 0)
        XCTAssertEqual(all.notifications.compactMap { $0["qry"]?["rid"]?.stringValue }, [first, second, third, fourth])
    }

    /// Runs `sql` on the daemon's store behind its back (here the SQLite file).
    func executeInStore(_ sql: String) throws {
        try SQLiteConnection(path: daemon.dataDirectory.appendingPathComponent("scorebook.sqlite").path).execute(sql)
    }

    func testTheCourierURLEndsWithTheTokenThatMadeItOrAfterThirtyDaysUnused() throws {
        try createZone(zone)
        let issued = try DaemonProcess.run("scorebookd", ["user", "token", "alice"] + daemon.storeArguments)
        XCTAssertEqual(issued.status, 0, issued.stderr)
        let second = try XCTUnwrap(try JSONValue.parse(issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["token"]?.stringValue)
        let bound = try createCourier()
        let recent = try createCourier(token: second)
        let stale = try createCourier(token: second)
        XCTAssertEqual(try barePoll(bound, timeout: 0).status, 200)

        // Unused for 31 days: ended, answered as an unknown one; used two hours ago: live.
        let day: Int64 = 86_400_000
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        func setBack(_ courier: String, lastUsed: Int64) throws {
            let channel = String(courier.split(separator: "/").last ?? "")
            try executeInStore("UPDATE push_tokens SET created_at = \(now - 40 * day), last_used_at = \(lastUsed) WHERE token = '\(channel)'")
        }
        try setBack(stale, lastUsed: now - 31 * day)
        try setBack(recent, lastUsed: now - 2 * 3_600_000)
        let unused = try barePoll(stale, timeout: 0)
        XCTAssertEqual(unused.status, 404, "\(unused.body)")
        XCTAssertEqual(unused.body["serverErrorCode"], "NOT_FOUND")
        XCTAssertEqual(try barePoll(recent, timeout: 0).status, 200, "used within 30 days")

        // Revoking only the token that made a courier ends it; the other token's courier lives on.
        let revoked = try DaemonProcess.run("scorebookd", ["user", "revoke", "alice", "--token", token] + daemon.storeArguments)
        XCTAssertEqual(revoked.status, 0, revoked.stderr)
        let ended = try barePoll(bound, timeout: 1)
        XCTAssertEqual(ended.status, 404, "\(ended.body)")
        XCTAssertGreaterThanOrEqual(ended.elapsed, 0.9, "an ended courier answers as an unknown one")
        XCTAssertEqual(try barePoll(recent, timeout: 0).status, 200, "made by the token still live")
    }
}

/// The same on a daemon serving PostgreSQL.
final class PostgresBrowserCourierTests: BrowserCourierTests {
    override func setUpWithError() throws {
        if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
        daemon = try DaemonProcess.start(postgresURL: try PostgresTestCluster.shared().createDatabase())
        token = try daemon.createUser("alice")
    }

    // Declared again: test discovery on Linux lists only a class's own methods.
    override func testTheCourierURLIsACapabilityBoundToItsUser() throws { try super.testTheCourierURLIsACapabilityBoundToItsUser() }
    override func testABarePollAnswersOneNotificationAtATimeAndKeepsItsPlace() throws {
        try super.testABarePollAnswersOneNotificationAtATimeAndKeepsItsPlace()
    }
    override func testTheCourierURLEndsWithTheTokenThatMadeItOrAfterThirtyDaysUnused() throws {
        try super.testTheCourierURLEndsWithTheTokenThatMadeItOrAfterThirtyDaysUnused()
    }

    override func executeInStore(_ sql: String) throws {
        let url = try XCTUnwrap(daemon.postgresURL)
        try PostgresTestCluster.shared().psql(sql, database: String(url.split(separator: "/").last ?? ""))
    }
}
