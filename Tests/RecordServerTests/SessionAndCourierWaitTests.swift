import Foundation
@testable import RecordServer
import XCTest

/// Two small pieces of CloudKit JS support, in process: a `ckSession` that names no token is no
/// token, and a cursor-less courier poll's wait is woken by a commit of its database only, by its
/// deadline, or by the daemon shutting down.
final class SessionAndCourierWaitTests: XCTestCase {
    func request(_ query: [String: String]) -> RequestFacts {
        RequestFacts(method: .get, path: "/database/1/iCloud.x/development/public/users/current", query: query)
    }

    func testASessionOfNullUndefinedOrNothingIsNoSession() {
        for absent in ["null", "undefined", "", "  ", " null "] {
            XCTAssertNil(request(["ckAPIToken": "api", "ckSession": absent]).webAuthToken, "ckSession=\(absent)")
            XCTAssertNil(request(["ckAPIToken": "api", "ckWebAuthToken": absent]).webAuthToken, "ckWebAuthToken=\(absent)")
            XCTAssertNil(request(["ckWebAuthToken": absent, "ckSession": absent]).userTokenHash)
        }
        XCTAssertEqual(request(["ckSession": "abc"]).webAuthToken, "abc")
        XCTAssertEqual(request(["ckWebAuthToken": "null", "ckSession": "abc"]).webAuthToken, "abc", "the one that names a token")
        XCTAssertEqual(request(["ckWebAuthToken": "def", "ckSession": "abc"]).webAuthToken, "def", "ckWebAuthToken first, as before")
        XCTAssertEqual(request(["ckSession": "nullish"]).webAuthToken, "nullish", "only the exact words count as none")
        // A value that does not decode is kept as sent, so it is a wrong token, not an empty one.
        let undecodable = RequestFacts.parseQuery("ckAPIToken=%ZZ&ckWebAuthToken=%&ckSession=null")
        XCTAssertEqual(undecodable["ckWebAuthToken"], "%")
        XCTAssertEqual(request(undecodable).webAuthToken, "%")
    }

    /// The token may come as the `X-Apple-CloudKit-Web-Auth-Token` header too, with the same rule
    /// for values that name none; a token in the query wins.
    func testTheWebAuthTokenHeaderIsATokenUnlessItNamesNone() {
        var headed = request(["ckAPIToken": "api"])
        for absent in ["null", "undefined", ""] {
            headed.webAuthTokenHeader = absent
            XCTAssertNil(headed.webAuthToken, "header \(absent)")
            XCTAssertNil(headed.userTokenHash)
        }
        headed.webAuthTokenHeader = "abc"
        XCTAssertEqual(headed.webAuthToken, "abc")
        XCTAssertNotNil(headed.userTokenHash)
        var both = request(["ckSession": "query"])
        both.webAuthTokenHeader = "header"
        XCTAssertEqual(both.webAuthToken, "query")
        both = request(["ckSession": "null"])
        both.webAuthTokenHeader = "header"
        XCTAssertEqual(both.webAuthToken, "header", "a query value that names none gives way to the header")
    }

    func testACommitWakesOnlyItsDatabasesWaiters() async throws {
        let waiters = CommitWaiters()
        let mine = try XCTUnwrap(waiters.register(1))
        let other = try XCTUnwrap(waiters.register(2))
        XCTAssertEqual(waiters.count, 2)
        let started = ContinuousClock.now
        async let woken: Void = mine.wait(until: started + .seconds(20))
        try await Task.sleep(for: .milliseconds(50))
        waiters.wake([1])
        await woken
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5), "woken by its database's commit, not its deadline")

        // The other database's waiter sleeps until its deadline.
        let deadline = ContinuousClock.now + .milliseconds(300)
        await other.wait(until: deadline)
        XCTAssertGreaterThanOrEqual(ContinuousClock.now, deadline)
        waiters.remove(mine)
        waiters.remove(other)
        XCTAssertEqual(waiters.count, 0)

        // A commit between registering and waiting is not lost; shutting down answers everyone.
        let early = try XCTUnwrap(waiters.register(3))
        waiters.wake([])
        var before = ContinuousClock.now
        await early.wait(until: .now + .seconds(20))
        XCTAssertLessThan(ContinuousClock.now - before, .seconds(5), "a wake before the wait still counts")
        let last = try XCTUnwrap(waiters.register(4))
        waiters.close()
        before = ContinuousClock.now
        await last.wait(until: .now + .seconds(20))
        XCTAssertLessThan(ContinuousClock.now - before, .seconds(5), "shutting down ends the wait")
        XCTAssertNil(waiters.register(5), "no new waits after shutdown")
    }
}
