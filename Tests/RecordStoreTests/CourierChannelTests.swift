import Foundation
import RecordModel
import RecordStore
import XCTest

/// A courier URL lives with the user token that made it and ends after 30 days unused; one made
/// without a user token lives while its user has any live token. On the selected backend.
final class CourierChannelTests: SubscriptionStoreTestCase {
    private let day: Int64 = 86_400_000

    private func isLive(_ channel: PushToken) throws -> Bool {
        try store.courierChannel(token: channel.token, container: Self.container, environment: .development) != nil
    }

    func testACourierEndsWithItsTokenWhenRevokedOrExpired() throws {
        let kept = try store.issueToken(userName: "alice", expiresAt: nil).token
        let revoked = try store.issueToken(userName: "alice", expiresAt: nil).token
        let expiring = try store.issueToken(userName: "alice", expiresAt: clock.now + day).token
        let byKept = try store.createPushToken(dev, apnsEnvironment: "development", authTokenHash: TokenHash.hex(kept))
        let byRevoked = try store.createPushToken(dev, apnsEnvironment: "development", authTokenHash: TokenHash.hex(revoked))
        let byExpiring = try store.createPushToken(dev, apnsEnvironment: "development", authTokenHash: TokenHash.hex(expiring))
        let unbound = try store.createPushToken(dev, apnsEnvironment: "development", authTokenHash: TokenHash.hex("not a token"))
        XCTAssertTrue(try isLive(byRevoked))
        XCTAssertTrue(try isLive(byExpiring))

        _ = try store.revokeTokens(userName: "alice", token: revoked)
        advanceClock(milliseconds: 2 * day)
        XCTAssertFalse(try isLive(byRevoked), "its token was revoked")
        XCTAssertFalse(try isLive(byExpiring), "its token expired")
        XCTAssertTrue(try isLive(byKept))
        XCTAssertTrue(try isLive(unbound), "a hash that is no user token binds nothing: the user's live tokens keep it")

        _ = try store.revokeTokens(userName: "alice", token: nil)
        XCTAssertFalse(try isLive(byKept))
        XCTAssertFalse(try isLive(unbound))
    }

    func testACourierEndsAfterThirtyDaysUnusedAndEachUseExtendsIt() throws {
        let used = try store.createPushToken(dev, apnsEnvironment: "development")
        let unused = try store.createPushToken(dev, apnsEnvironment: "development")
        advanceClock(milliseconds: 20 * day)
        XCTAssertTrue(try isLive(used), "a use after 20 days is recorded")
        advanceClock(milliseconds: 20 * day)
        XCTAssertFalse(try isLive(unused), "40 days unused")
        XCTAssertTrue(try isLive(used), "20 days since its last use")
    }

    /// CloudKit JS's polls (no cursor) resume from a position the store keeps per courier: it
    /// starts at the channel's start, only moves forward, and outlives the store being reopened.
    func testTheBarePollPositionIsKeptMovesOnlyForwardAndOutlivesAReopen() throws {
        let channel = try store.createPushToken(dev, apnsEnvironment: "development")
        let fresh = try XCTUnwrap(try store.courierChannel(token: channel.token, container: Self.container, environment: .development))
        XCTAssertNil(fresh.deliveredCursor)
        XCTAssertEqual(fresh.barePollPosition, channel.startCursor, "nothing answered yet: from where the channel started")

        try store.advanceCourierPosition(token: channel.token, to: channel.startCursor + 5)
        try store.advanceCourierPosition(token: channel.token, to: channel.startCursor + 2)
        let moved = try XCTUnwrap(try store.courierChannel(token: channel.token, container: Self.container, environment: .development))
        XCTAssertEqual(moved.barePollPosition, channel.startCursor + 5, "a position behind the kept one does not move it back")
        XCTAssertEqual(try store.pushToken(dev, token: channel.token).barePollPosition, channel.startCursor + 5, "the owner's view agrees")
        let other = try XCTUnwrap(try store.courierChannel(token: cursorlessChannelToken(), container: Self.container, environment: .development))
        XCTAssertNil(other.deliveredCursor, "each courier has its own position")

        store.close()
        store = try reopenedStore()
        let reopened = try XCTUnwrap(try store.courierChannel(token: channel.token, container: Self.container, environment: .development))
        XCTAssertEqual(reopened.barePollPosition, channel.startCursor + 5)
    }

    private func cursorlessChannelToken() throws -> String {
        try store.createPushToken(dev, apnsEnvironment: "development").token
    }
}
