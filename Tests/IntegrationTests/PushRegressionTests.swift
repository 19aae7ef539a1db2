import Foundation
import RecordModel
import XCTest

/// Daemon bugs found while writing the push suite, fixed since; each test states the
/// request, what the contract expects and what the daemon used to do.
final class PushRegressionTests: PushTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try createZone(zone)
    }

    /// `GET {courier}?since=C&timeout=0` when notifications after C already exist.
    /// Expected: `200` with those notifications ("as soon as a notification newer than
    /// `since` exists"); a zero timeout only means "do not wait".
    /// Actual: `200 {"notifications": [], "cursor": C}` every time: the courier's wait loop breaks
    /// before reading when the deadline is already reached, so a non-blocking poll never
    /// delivers anything.
    func testLongPollWithZeroTimeoutReturnsNotificationsThatAlreadyExist() throws {
        try subscribe(querySubscription("games", type: "Game"))
        let courier = try createCourier()
        let start = try startCursor(courier)
        let game = newName("Game")
        try create(game, "Game")
        XCTAssertEqual(try poll(courier, since: start, timeout: 1).notifications.count, 1, "the notification exists")
        let answer = try poll(courier, since: start, timeout: 0)
        XCTAssertEqual(answer.notifications.compactMap { $0["qry"]?["rid"]?.stringValue }, [game],
                       "timeout=0 must return what is already there")
        XCTAssertNotEqual(answer.cursor, start)
    }

    /// A query subscription whose filter the matcher cannot evaluate, e.g.
    /// `{"comparator": "IN", "fieldName": "name", "fieldValue": {"value": "Catan"}}` (IN needs a
    /// list), then any `records/modify` saving a Game in that zone.
    /// Expected: `subscriptions/modify` refuses the subscription with a per-item `BAD_REQUEST`
    /// (as `records/query` refuses the same filter), and writes are never affected by one.
    /// Actual: the subscription is saved; from then on every write of a Game in the zone fails
    /// with `400 BAD_REQUEST "IN needs a list value"` (matching runs inside the write transaction
    /// and its error rolls the write back), and so does deleting the zone while it holds a Game:
    /// one bad subscription locks the user out of their own data.
    func testASubscriptionWithAnUnevaluableFilterIsRefusedAndNeverBlocksWrites() throws {
        let game = newName("Game")
        try create(game, "Game", ["name": "Catan"])
        let badFilters: [JSONValue] = [
            ["comparator": "IN", "fieldName": "name", "fieldValue": ["value": "Catan"]],
            ["comparator": "BEGINS_WITH", "fieldName": "name", "fieldValue": ["value": 7]],
        ]
        for (index, filter) in badFilters.enumerated() {
            let queryBody: JSONValue = ["zoneID": ["zoneName": .string(zone)], "query": ["recordType": "Game", "filterBy": [filter]]]
            let query = try daemon.post(path("records/query"), token: token, json: queryBody.serializedString())
            XCTAssertEqual(query.status, 400, "records/query refuses \(filter.serializedString())")

            let answer = try call("subscriptions/modify", ["operations": [["operationType": "create", "subscription":
                querySubscription("bad-\(index)", type: "Game", filterBy: [filter])]]])
            let entry = answer["subscriptions"]?.arrayValue?.first
            XCTAssertEqual(entry?["serverErrorCode"], "BAD_REQUEST",
                           "a subscription whose filter cannot be evaluated must be refused: \(entry?.serializedString() ?? "nil")")
        }

        let writeBody: JSONValue = [
            "zoneID": ["zoneName": .string(zone)],
            "operations": [["operationType": "create", "record": record(newName("Game"), "Game", ["name": "Chess"])]],
        ]
        let write = try daemon.post(path("records/modify"), token: token, json: writeBody.serializedString())
        XCTAssertEqual(write.status, 200, "a write must never fail because of a subscription: \(write.body.serializedString())")
        let deletionBody: JSONValue = [
            "zoneID": ["zoneName": .string(zone)],
            "operations": [["operationType": "forceDelete", "record": ["recordName": .string(game)]]],
        ]
        let deletion = try daemon.post(path("records/modify"), token: token, json: deletionBody.serializedString())
        XCTAssertEqual(deletion.status, 200, "nor a deletion: \(deletion.body.serializedString())")
    }
}
