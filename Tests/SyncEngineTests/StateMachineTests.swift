import Foundation
import RecordClient
import RecordModel
import SyncEngine
import XCTest

final class ZoneFetchStateMachineTests: XCTestCase {
    func serverError(_ code: ServerErrorCode, retryAfter: Int? = nil) -> RecordClientError {
        .server(ServerError(code, "reason", retryAfter: retryAfter), httpStatus: code.httpStatus)
    }

    func testFollowsMoreComingUntilFalse() {
        var machine = ZoneFetchStateMachine(syncToken: "t0")
        XCTAssertEqual(machine.start(), .fetch(syncToken: "t0"))
        XCTAssertEqual(machine.pageApplied(syncToken: "t1", moreComing: true), .fetch(syncToken: "t1"))
        XCTAssertEqual(machine.pageApplied(syncToken: "t2", moreComing: false), .finish(reconcile: false))
        XCTAssertEqual(machine.syncToken, "t2")
    }

    func testAnExpiredTokenRestartsFromScratchAndReconcilesAtTheEnd() {
        var machine = ZoneFetchStateMachine(syncToken: "old")
        _ = machine.start()
        XCTAssertEqual(machine.fetchFailed(serverError(.changeTokenExpired)), .restartFromScratch)
        XCTAssertEqual(machine.restartedFromScratch(), .fetch(syncToken: nil))
        XCTAssertEqual(machine.pageApplied(syncToken: "n1", moreComing: false), .finish(reconcile: true))
    }

    func testAnInterruptedRefetchIsResumedFromScratch() {
        var machine = ZoneFetchStateMachine(syncToken: "half-way", refetchInProgress: true)
        XCTAssertEqual(machine.start(), .fetch(syncToken: nil))
        XCTAssertEqual(machine.pageApplied(syncToken: "n1", moreComing: false), .finish(reconcile: true))
    }

    func testAMissingZoneIsRecreatedOnce() {
        var machine = ZoneFetchStateMachine(syncToken: "t")
        XCTAssertEqual(machine.fetchFailed(serverError(.zoneNotFound)), .recreateZone)
        XCTAssertEqual(machine.zoneRecreated(), .fetch(syncToken: nil))
        XCTAssertEqual(machine.fetchFailed(serverError(.zoneNotFound)), .fail(serverError(.zoneNotFound)))
    }

    func testThrottlingWaitsThenGivesUp() {
        var machine = ZoneFetchStateMachine(syncToken: "t", retryPolicy: RetryPolicy(maximumAttempts: 2, baseDelay: 1, maximumDelay: 10))
        XCTAssertEqual(machine.fetchFailed(serverError(.throttled, retryAfter: 4)), .wait(seconds: 4))
        XCTAssertEqual(machine.waited(), .fetch(syncToken: "t"))
        XCTAssertEqual(machine.fetchFailed(serverError(.tryAgainLater)), .wait(seconds: 2))
        XCTAssertEqual(machine.fetchFailed(serverError(.tryAgainLater)), .fail(serverError(.tryAgainLater)))
    }

    func testUnreachableServerFails() {
        var machine = ZoneFetchStateMachine(syncToken: nil)
        XCTAssertEqual(machine.fetchFailed(.unreachable("down")), .fail(.unreachable("down")))
    }
}

final class WatchStateMachineTests: XCTestCase {
    let start = Date(timeIntervalSince1970: 1_000_000)

    func testOpensSyncsPollsAndSyncsAgainOnNotifications() {
        var machine = WatchStateMachine(deadline: start.addingTimeInterval(100), cursor: "c0", pollTimeout: 30)
        XCTAssertEqual(machine.nextAction(now: start), .openChannel)
        machine.channelOpened()
        XCTAssertEqual(machine.nextAction(now: start), .sync)
        machine.syncSucceeded()
        XCTAssertEqual(machine.nextAction(now: start), .poll(since: "c0", timeout: 30))
        machine.pollReturned(notificationCount: 2, cursor: "c2", now: start)
        XCTAssertEqual(machine.cursor, "c0", "the cursor moves only once the changes are synced")
        XCTAssertEqual(machine.nextAction(now: start), .sync)
        machine.syncSucceeded()
        XCTAssertEqual(machine.cursor, "c2")
        XCTAssertEqual(machine.nextAction(now: start.addingTimeInterval(95)), .poll(since: "c2", timeout: 5))
        XCTAssertEqual(machine.nextAction(now: start.addingTimeInterval(100)), .stop)
    }

    func testAFailedSyncKeepsTheCursorAndBacksOff() {
        var machine = WatchStateMachine(deadline: nil, cursor: "c0")
        machine.channelOpened()
        machine.syncSucceeded()
        machine.pollReturned(notificationCount: 1, cursor: "c1", now: start)
        machine.syncFailed(.unreachable("down"), now: start)
        guard case .sleep(let seconds) = machine.nextAction(now: start) else { return XCTFail("expected a back-off") }
        XCTAssertGreaterThan(seconds, 0)
        XCTAssertEqual(machine.nextAction(now: start.addingTimeInterval(seconds)), .sync)
        XCTAssertEqual(machine.cursor, "c0")
        machine.syncSucceeded()
        XCTAssertEqual(machine.cursor, "c1")
    }

    func testAPollOutageSyncsBeforePollingAgainAndAGoneChannelIsReopened() {
        var machine = WatchStateMachine(deadline: nil, cursor: nil)
        machine.channelOpened()
        machine.syncSucceeded()
        machine.pollFailed(.unreachable("down"), now: start)
        XCTAssertEqual(machine.nextAction(now: start.addingTimeInterval(60)), .sync)
        machine.syncSucceeded()
        machine.pollFailed(.server(ServerError(.notFound, "no token"), httpStatus: 404), now: start)
        XCTAssertEqual(machine.nextAction(now: start), .openChannel)
    }

    func testRefusedCredentialsStopWithTheFailure() {
        var machine = WatchStateMachine(deadline: nil, cursor: nil)
        machine.channelFailed(.server(ServerError(.authenticationFailed, "bad token"), httpStatus: 401), now: start)
        XCTAssertEqual(machine.nextAction(now: start), .stop)
        XCTAssertEqual(machine.failure?.serverErrorCode, .authenticationFailed)
    }

    func testWithoutNotificationsItSyncsEveryPollInterval() {
        var machine = WatchStateMachine(deadline: start.addingTimeInterval(25), cursor: nil, pollTimeout: 10)
        XCTAssertEqual(machine.nextAction(now: start), .openChannel)
        machine.channelFailed(.server(ServerError(.badRequest, "no push here"), httpStatus: 400), now: start)
        XCTAssertEqual(machine.nextAction(now: start), .sync)
        machine.syncSucceeded()
        XCTAssertEqual(machine.nextAction(now: start), .sleep(seconds: 10))
        XCTAssertEqual(machine.nextAction(now: start.addingTimeInterval(10)), .sync)
        machine.syncSucceeded()
        XCTAssertEqual(machine.nextAction(now: start.addingTimeInterval(20)), .sleep(seconds: 5))
        XCTAssertEqual(machine.nextAction(now: start.addingTimeInterval(25)), .stop)
    }

    func testLocalChangesWaitingTriggerASync() {
        var machine = WatchStateMachine(deadline: nil, cursor: nil)
        machine.channelOpened()
        machine.syncSucceeded()
        machine.pollReturned(notificationCount: 0, cursor: "c5", now: start)
        XCTAssertEqual(machine.cursor, "c5")
        machine.localChangesPending()
        XCTAssertEqual(machine.nextAction(now: start), .sync)
    }

    /// Without notifications, local edits cut the interval between syncs short; during a
    /// failure's back-off they do not (they could not be sent either).
    func testLocalChangesCutTheIntervalShortWithoutNotificationsButNotABackOff() {
        var machine = WatchStateMachine(deadline: nil, cursor: nil, pollTimeout: 10)
        machine.channelFailed(.server(ServerError(.badRequest, "no push here"), httpStatus: 400), now: start)
        XCTAssertEqual(machine.nextAction(now: start), .sync)
        machine.syncSucceeded()
        XCTAssertEqual(machine.nextAction(now: start), .sleep(seconds: 10))
        machine.localChangesPending()
        XCTAssertEqual(machine.nextAction(now: start.addingTimeInterval(1)), .sync)
        machine.syncFailed(.unreachable("down"), now: start.addingTimeInterval(1))
        XCTAssertTrue(machine.isBackingOff)
        XCTAssertEqual(machine.nextAction(now: start.addingTimeInterval(1)), .sleep(seconds: 0.5))
        machine.localChangesPending()
        XCTAssertEqual(machine.nextAction(now: start.addingTimeInterval(1.25)), .sleep(seconds: 0.25))
    }
}

final class PolicyTests: XCTestCase {
    func testRetryDelaysGrowHonourRetryAfterAndEnd() {
        let policy = RetryPolicy(maximumAttempts: 3, baseDelay: 1, maximumDelay: 3)
        XCTAssertEqual(policy.delay(afterAttempt: 1, retryAfter: nil), 1)
        XCTAssertEqual(policy.delay(afterAttempt: 2, retryAfter: nil), 2)
        XCTAssertEqual(policy.delay(afterAttempt: 3, retryAfter: nil), 3)
        XCTAssertEqual(policy.delay(afterAttempt: 1, retryAfter: 10), 10, "the server's word wins over the cap")
        XCTAssertNil(policy.delay(afterAttempt: 4, retryAfter: nil))
    }

    func testLoginRules() {
        XCTAssertEqual(LoginPolicy.decide(dataOwner: nil, hasLocalData: true, user: "_a"), .adopt)
        XCTAssertEqual(LoginPolicy.decide(dataOwner: "_a", hasLocalData: true, user: "_a"), .resume)
        XCTAssertEqual(LoginPolicy.decide(dataOwner: "_a", hasLocalData: false, user: "_b"), .adopt)
        guard case .refuse(let reason) = LoginPolicy.decide(dataOwner: "_a", hasLocalData: true, user: "_b") else {
            return XCTFail("another user's data must not be adopted")
        }
        XCTAssertTrue(reason.contains("--delete-local"))
    }
}
