import Foundation
import RecordModel
import XCTest

/// Which subscriptions fire, over HTTP against the real daemon: after each change
/// the courier holds exactly the notifications that change should fire, no more and no fewer.
/// Notifications are written in the change's transaction, so a `timeout=0` poll right after the
/// answer sees all of them.
final class PushMatchingTests: PushTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try createZone(zone)
        try createZone("Other")
    }

    /// One notification in a comparable form: `qry:<sid>:<fo>:<rid>`, `fet:<sid>:<zid>` or `met:<sid>`.
    func describe(_ ck: JSONValue) -> String {
        if let qry = ck["qry"] {
            return "qry:\(qry["sid"]?.stringValue ?? "?"):\(qry["fo"]?.int64Value ?? 0):\(qry["rid"]?.stringValue ?? "?")"
        }
        if let fet = ck["fet"] { return "fet:\(fet["sid"]?.stringValue ?? "?"):\(fet["zid"]?.stringValue ?? "?")" }
        if let met = ck["met"] { return "met:\(met["sid"]?.stringValue ?? "?")" }
        return "unknown:\(ck.serializedString())"
    }

    func testEachSubscriptionTypeFiresExactlyWhenItShould() throws {
        let azulFilter: JSONValue = ["comparator": "EQUALS", "fieldName": "name", "fieldValue": ["value": "Azul"]]
        try subscribe(
            querySubscription("game-updates", type: "Game", firesOn: ["update"], desiredKeys: ["name"]),
            querySubscription("azul-created", type: "Game", firesOn: ["create"], filterBy: [azulFilter]),
            querySubscription("match-saves", type: "Match", firesOn: ["create", "update"]),
            ["subscriptionID": "zone", "subscriptionType": "zone", "zoneID": ["zoneName": .string(zone)]],
            ["subscriptionID": "db", "subscriptionType": "database"])
        let courier = try createCourier()
        var cursor = try startCursor(courier)
        var last: [JSONValue] = []
        func fired(_ change: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
            try change()
            let answer = try poll(courier, since: cursor, timeout: 0, file: file, line: line)
            cursor = answer.cursor
            last = answer.notifications
            return answer.notifications.map(describe).sorted()
        }

        let catan = newName("Game"), azul = newName("Game"), match = newName("Match"), elsewhere = newName("Game")
        XCTAssertEqual(try fired { try create(catan, "Game", ["name": "Catan"]) }, ["fet:zone:\(zone)", "met:db"],
                       "a creation that matches no query subscription fires only the zone and database ones")
        XCTAssertEqual(try fired { try create(azul, "Game", ["name": "Azul"]) },
                       ["fet:zone:\(zone)", "met:db", "qry:azul-created:1:\(azul)"], "filterBy matches")
        XCTAssertEqual(try fired { try modify([("forceUpdate", record(catan, "Game", ["name": "Catan 2"]))]) },
                       ["fet:zone:\(zone)", "met:db", "qry:game-updates:2:\(catan)"], "an update fires fo=2")
        let update = last.first { $0["qry"] != nil }?["qry"]
        XCTAssertEqual(update?["af"], ["name": "Catan 2"], "af holds the desired keys of the updated record")
        XCTAssertEqual(try fired { try modify([("forceUpdate", record(azul, "Game", ["name": "Azul!"]))]) },
                       ["fet:zone:\(zone)", "met:db", "qry:game-updates:2:\(azul)"],
                       "a filter on creations does not fire on updates")
        XCTAssertEqual(try fired { try create(match, "Match") }, ["fet:zone:\(zone)", "met:db", "qry:match-saves:1:\(match)"])
        XCTAssertEqual(try fired { try modify([("forceDelete", record(match, "Match"))]) }, ["fet:zone:\(zone)", "met:db"],
                       "firesOn without delete: a deletion does not fire the query subscription")
        XCTAssertEqual(try fired { try create(elsewhere, "Game", ["name": "Azul"], zone: "Other") }, ["met:db"],
                       "query and zone subscriptions are bound to their zone; the database one sees every zone")
        XCTAssertEqual(try fired { try createZone("Third") }, ["met:db"], "a created zone fires the database subscription")
        XCTAssertEqual(try fired { try deleteZone("Other") }, ["met:db"], "so does a deleted zone")
        XCTAssertEqual(try fired { _ = try modify([("create", record(newName("Game"), "Game", ["name": "Azul"])),
                                                    ("update", record(newName("Game"), "Game", [:], tag: "missing"))]) }, [],
                       "a rolled-back batch fires nothing")
    }

    /// The courier URL names the address the client used; `X-Forwarded-Proto` from a peer that is
    /// no trusted proxy changes nothing (DaemonRequestLogTests covers a trusted one); without a
    /// Host header (HTTP/1.0) it is the daemon's own bound address.
    func testTheCourierURLNamesAnAddressTheClientCanReach() throws {
        let tokensPath = "/database/1/\(Self.container)/development/tokens/create"
        let body = Array(#"{"apnsEnvironment": "development"}"#.utf8)
        let proxied = try daemon.request("POST", tokensPath, token: token, headers: [("X-Forwarded-Proto", "https")], body: body).parsed()
        XCTAssertEqual(URL(string: proxied.body["webcourierURL"]?.stringValue ?? "")?.scheme, "http")

        let head = "POST \(tokensPath) HTTP/1.0\r\nAuthorization: Bearer \(token!)\r\nContent-Length: \(body.count)\r\n\r\n"
        let answer = try RawHTTP.parse(try RawHTTP.sendBytes(port: daemon.port, Array(head.utf8) + body, timeout: 10)).parsed()
        XCTAssertEqual(answer.status, 200, answer.body.serializedString())
        let url = try XCTUnwrap(URL(string: answer.body["webcourierURL"]?.stringValue ?? ""))
        XCTAssertEqual(url.host, "127.0.0.1")
        XCTAssertEqual(url.port, daemon.port, "without a Host header the daemon names its own address and port")
        XCTAssertEqual(try poll(url.path, since: "", timeout: 0).notifications.count, 0, "and that URL works")
    }

    /// At the 1,000-subscription cap a new subscription is LIMIT_EXCEEDED, and saving an existing
    /// one again (an update) still works.
    func testTheSubscriptionCapRefusesOnlyNewSubscriptions() throws {
        for start in stride(from: 0, to: 1000, by: 400) {
            try subscribe(contentsOf: (start..<min(start + 400, 1000)).map { ["subscriptionID": .string("db-\($0)"), "subscriptionType": "database"] })
        }
        let extra = try call("subscriptions/modify", ["operations": [["operationType": "create",
                                                                      "subscription": ["subscriptionID": "db-new", "subscriptionType": "database"]]]])
        XCTAssertEqual(extra["subscriptions"]?.arrayValue?.first?["serverErrorCode"], "LIMIT_EXCEEDED")
        try subscribe(["subscriptionID": "db-7", "subscriptionType": "zone", "zoneID": ["zoneName": .string(zone)]])
        XCTAssertEqual(try call("subscriptions/list", [:])["subscriptions"]?.arrayValue?.count, 1000)
    }
}
