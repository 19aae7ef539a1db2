import Foundation
import RecordModel
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Push delivery against the real daemon: long-poll and Server-Sent Events on the courier URL,
/// resumption from a cursor, isolation between users, shutdown and restart.
final class PushDeliveryTests: PushTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try createZone(zone)
    }

    func testLongPollReturnsPromptlyWhenAChangeLandsAndEmptyAtItsTimeout() throws {
        try subscribe(querySubscription("games", type: "Game", desiredKeys: ["name"]))
        let courier = try createCourier()
        let start = try startCursor(courier)

        let quiet = try poll(courier, since: start, timeout: 1)
        XCTAssertEqual(quiet.notifications.count, 0)
        XCTAssertEqual(quiet.cursor, start, "an empty answer keeps the cursor")
        XCTAssertGreaterThanOrEqual(quiet.elapsed, 0.9, "timeout=1 waits about a second")
        XCTAssertLessThan(quiet.elapsed, 4)

        let waiting = background { [client] in try client.poll(courier, since: start, timeout: 30) }
        Thread.sleep(forTimeInterval: 0.4)
        let game = newName("Game")
        try create(game, "Game", ["name": "Catan"])
        let acknowledged = Date()
        guard case .success(let answer)? = waiting.wait(timeout: 10) else { return XCTFail("the long-poll did not answer within 10 s") }
        let latency = (waiting.finishedAt ?? Date()).timeIntervalSince(acknowledged)
        XCTAssertLessThan(latency, 2, "a long-poll answers as soon as a notification exists, not at its timeout")
        XCTAssertLessThan(answer.elapsed, 10, "timeout=30, yet it answered at the change")
        XCTAssertEqual(answer.notifications.count, 1)
        let qry = answer.notifications.first?["qry"]
        XCTAssertEqual(qry?["rid"], .string(game))
        XCTAssertEqual(qry?["fo"]?.int64Value, 1)
        XCTAssertEqual(qry?["sid"], "games")
        XCTAssertEqual(qry?["zid"], .string(zone))
        XCTAssertEqual(qry?["dbs"]?.int64Value, 2)
        XCTAssertEqual(qry?["af"], ["name": "Catan"])
        XCTAssertEqual(answer.notifications.first?["cid"], .string(Self.container))
        XCTAssertNotEqual(answer.cursor, start)

        // Already-waiting notifications answer at once; the new cursor has nothing after it.
        let again = try poll(courier, since: start, timeout: 30)
        XCTAssertLessThan(again.elapsed, 2)
        XCTAssertEqual(again.notifications.count, 1)
        XCTAssertEqual(again.cursor, answer.cursor)
        let after = try poll(courier, since: answer.cursor, timeout: 1)
        XCTAssertEqual(after.notifications.count, 0)
        XCTAssertEqual(after.cursor, answer.cursor)
    }

    /// `timeout` above 60 is capped, not refused; a malformed one or a malformed cursor is 400.
    func testLongPollParameters() throws {
        try subscribe(querySubscription("games", type: "Game"))
        let courier = try createCourier()
        let start = try startCursor(courier)

        let waiting = background { [client] in try client.poll(courier, since: start, timeout: 3600) }
        Thread.sleep(forTimeInterval: 0.3)
        try create(newName("Game"), "Game")
        guard case .success(let answer)? = waiting.wait(timeout: 10) else { return XCTFail("timeout=3600 must be accepted and answer") }
        XCTAssertEqual(answer.notifications.count, 1)

        for bad in ["timeout=abc", "timeout=-1", "since=not-a-cursor&timeout=0"] {
            let reply = try daemon.request("GET", "\(courier)?\(bad)", token: token).parsed()
            XCTAssertEqual(reply.status, 400, bad)
            XCTAssertEqual(reply.body["serverErrorCode"], "BAD_REQUEST", bad)
        }
        let badResume = try daemon.request("GET", courier, token: token, headers: [("Accept", "text/event-stream"),
                                                                                 ("Last-Event-ID", "garbage")], timeout: 5).parsed()
        XCTAssertEqual(badResume.status, 400, "a malformed Last-Event-ID is refused")
        let unknown = try daemon.request("GET", "/database/1/\(Self.container)/development/courier/\(String(repeating: "ab", count: 32))?timeout=0",
                                         token: token).parsed()
        XCTAssertEqual(unknown.status, 404)
        XCTAssertEqual(unknown.body["serverErrorCode"], "NOT_FOUND")
    }

    /// The contract caps `timeout` at 60 s; proving the cap takes a minute, so this runs only
    /// with SCOREBOOK_SLOW_TESTS=1.
    func testLongPollTimeoutIsCappedAtSixtySeconds() throws {
        try XCTSkipUnless(ProcessInfo.processInfo.environment["SCOREBOOK_SLOW_TESTS"] == "1", "set SCOREBOOK_SLOW_TESTS=1 to run")
        let courier = try createCourier()
        let start = try startCursor(courier)
        let answer = try poll(courier, since: start, timeout: 3600, httpTimeout: 90)
        XCTAssertEqual(answer.notifications.count, 0)
        XCTAssertGreaterThan(answer.elapsed, 58)
        XCTAssertLessThan(answer.elapsed, 65)
    }

    func testEventStreamDeliversANotificationFiredAfterConnecting() throws {
        try subscribe(querySubscription("games", type: "Game", desiredKeys: ["name"]),
                      ["subscriptionID": "zone", "subscriptionType": "zone", "zoneID": ["zoneName": .string(zone)]])
        let courier = try createCourier()
        let stream = try openEventStream(courier)
        XCTAssertEqual(stream.waitForHead(timeout: 5), 200)
        XCTAssertTrue(stream.headers["content-type"]?.hasPrefix("text/event-stream") ?? false, "\(stream.headers)")
        XCTAssertTrue(stream.waitForComment("connected", timeout: 5), "the stream opens with a comment")
        XCTAssertNil(stream.nextEvent(timeout: 0.3), "nothing happened yet")

        let game = newName("Game")
        try create(game, "Game", ["name": "Catan"])
        var events: [ServerSentEvent] = []
        for _ in 0..<2 {
            guard let event = stream.nextEvent(timeout: 3) else { break }
            events.append(event)
        }
        XCTAssertEqual(events.count, 2, "the query and the zone notification of one change")
        var cks: [JSONValue] = []
        for event in events {
            XCTAssertNil(event.event, "plain message events, which an EventSource's onmessage sees")
            XCTAssertNotNil(event.id, "each event's id is its cursor")
            guard let payload = try? JSONValue.parse(event.data), let ck = payload["ck"] else {
                XCTFail("data must be {\"ck\": …}: \(event.data)")
                continue
            }
            cks.append(ck)
        }
        XCTAssertNotEqual(events.first?.id, events.last?.id)
        let query = cks.first { $0["qry"] != nil }
        XCTAssertEqual(query?["qry"]?["rid"], .string(game))
        XCTAssertEqual(query?["qry"]?["af"], ["name": "Catan"])
        XCTAssertEqual(cks.first { $0["fet"] != nil }?["fet"]?["sid"], "zone")

        // The last event id is a cursor the long-poll understands.
        if let last = events.last?.id {
            XCTAssertEqual(try poll(courier, since: last, timeout: 1).notifications.count, 0)
        }
    }

    /// The SSE heartbeat: a comment at least every 15 s on an idle stream (the daemon sends one
    /// after 10 s of quiet, so this test takes about 10 s).
    func testEventStreamSendsAHeartbeatWithinFifteenSeconds() throws {
        let courier = try createCourier()
        let stream = try openEventStream(courier)
        XCTAssertTrue(stream.waitForComment("connected", timeout: 5))
        let opened = Date()
        XCTAssertTrue(stream.waitForComment("heartbeat", timeout: 15), "a comment heartbeat at least every 15 s")
        XCTAssertLessThan(Date().timeIntervalSince(opened), 15)
    }

    /// Two writers committing concurrently while one client follows the event stream and another
    /// follows long-poll cursors: neither skips a notification (cursors follow commit order).
    func testConcurrentWritersNeverMakeAFollowerSkip() throws {
        let perWriter = 60
        try subscribe(querySubscription("games", type: "Game", firesOn: ["create"]))
        let courier = try createCourier()
        let start = try startCursor(courier)
        let stream = try openEventStream(courier, lastEventID: start)
        XCTAssertTrue(stream.waitForComment("connected", timeout: 5))
        let follower = background { [client] () -> [String] in
            var nids: [String] = []
            var cursor = start
            let end = Date().addingTimeInterval(20)
            while nids.count < 2 * perWriter && Date() < end {
                let answer = try client.poll(courier, since: cursor, timeout: 5)
                nids += answer.notifications.compactMap { $0["nid"]?.stringValue }
                cursor = answer.cursor
            }
            return nids
        }
        let writers = (0..<2).map { writer in
            background { [client] () -> Int in
                for index in 0..<perWriter { try client.create(client.newName("Game"), "Game", ["name": .string("w\(writer)-\(index)")]) }
                return perWriter
            }
        }
        var streamed: [String] = []
        let deadline = Date().addingTimeInterval(20)
        while streamed.count < 2 * perWriter && Date() < deadline {
            guard let event = stream.nextEvent(timeout: max(0.1, deadline.timeIntervalSinceNow)) else { break }
            if let nid = try? JSONValue.parse(event.data)["ck"]?["nid"]?.stringValue { streamed.append(nid) }
        }
        stream.closeConnection()
        for writer in writers {
            guard case .success? = writer.wait(timeout: 30) else { return XCTFail("a writer failed or did not finish") }
        }
        let full = try drain(courier, since: start, count: 2 * perWriter).notifications.compactMap { $0["nid"]?.stringValue }
        XCTAssertEqual(full.count, 2 * perWriter)
        XCTAssertEqual(streamed, full, "the event stream saw every notification, in cursor order")
        guard case .success(let polled)? = follower.wait(timeout: 25) else { return XCTFail("the long-poll follower failed") }
        XCTAssertEqual(polled, full, "the long-poll follower saw every notification, in cursor order")
    }

    /// subscriptions/modify, list and lookup over HTTP, and a firesOnce subscription that is gone
    /// from the list once it fired.
    func testSubscriptionsOverHTTPAndFiresOnce() throws {
        var once = querySubscription("once", type: "Game", firesOn: ["create"])
        if case .object(var members) = once { members["firesOnce"] = true; once = .object(members) }
        try subscribe(once, ["subscriptionID": "db", "subscriptionType": "database"])
        let listed = try call("subscriptions/list", [:])["subscriptions"]?.arrayValue ?? []
        XCTAssertEqual(Set(listed.compactMap { $0["subscriptionID"]?.stringValue }), ["once", "db"])
        let lookedUp = try call("subscriptions/lookup", ["subscriptions": [["subscriptionID": "once"], ["subscriptionID": "nope"]]])
        let entries = lookedUp["subscriptions"]?.arrayValue ?? []
        XCTAssertEqual(entries.first?["firesOnce"], true)
        XCTAssertEqual(entries.first?["query"]?["recordType"], "Game")
        XCTAssertEqual(entries.last?["serverErrorCode"], "NOT_FOUND")

        let courier = try createCourier()
        let start = try startCursor(courier)
        let first = newName("Game")
        try create(first, "Game")
        try create(newName("Game"), "Game")
        let fired = try drain(courier, since: start, count: 3).notifications
        XCTAssertEqual(fired.compactMap { $0["qry"]?["rid"]?.stringValue }, [first], "firesOnce fired for the first creation only")
        XCTAssertEqual(fired.filter { $0["met"] != nil }.count, 2)
        let after = try call("subscriptions/list", [:])["subscriptions"]?.arrayValue ?? []
        XCTAssertEqual(after.compactMap { $0["subscriptionID"]?.stringValue }, ["db"], "the firesOnce subscription removed itself")

        let deleted = try call("subscriptions/modify", ["operations": [["operationType": "delete", "subscription": ["subscriptionID": "db"]]]])
        XCTAssertEqual(deleted["subscriptions"]?.arrayValue?.first?["deleted"], true)
        let quietFrom = try poll(courier, since: start, timeout: 1).cursor
        try create(newName("Game"), "Game")
        XCTAssertEqual(try poll(courier, since: quietFrom, timeout: 1).notifications.count, 0, "no subscription, no notification")
    }

    /// A device that drops its event stream in the middle of a burst resumes from its last event
    /// id (SSE `Last-Event-ID`, or a long-poll's `since`) and gets every remaining notification
    /// once, in commit order.
    func testResumingAfterADisconnectDuringABurstMissesNothing() throws {
        let total = 200
        try subscribe(querySubscription("games", type: "Game", firesOn: ["create"]))
        let courier = try createCourier()
        let start = try startCursor(courier)

        let first = try openEventStream(courier, lastEventID: start)
        XCTAssertTrue(first.waitForComment("connected", timeout: 5))
        // The writer makes 20 changes, waits for the reader to disconnect, then makes the rest:
        // so the burst certainly spans the disconnect and the reconnect.
        let disconnected = DispatchSemaphore(value: 0)
        let writer = background { [client] () -> [String] in
            var names: [String] = []
            for index in 0..<total {
                if index == 20 { _ = disconnected.wait(timeout: .now() + 10) }
                let name = client.newName("Game")
                try client.create(name, "Game", ["name": .string("g\(index)")])
                names.append(name)
            }
            return names
        }
        var early: [ServerSentEvent] = []
        for _ in 0..<5 {
            guard let event = first.nextEvent(timeout: 10) else { break }
            early.append(event)
        }
        first.closeConnection()
        disconnected.signal()
        XCTAssertEqual(early.count, 5, "five events before the disconnect")
        guard let resumeFrom = early.last?.id else { return XCTFail("no event id to resume from") }
        Thread.sleep(forTimeInterval: 0.2)  // changes land while no one is connected

        // Resume over SSE while the writer is still writing.
        let second = try openEventStream(courier, lastEventID: resumeFrom)
        var resumed: [ServerSentEvent] = []
        let deadline = Date().addingTimeInterval(25)
        while resumed.count < total - early.count && Date() < deadline {
            guard let event = second.nextEvent(timeout: max(0.1, deadline.timeIntervalSinceNow)) else { break }
            resumed.append(event)
        }
        second.closeConnection()
        guard case .success(let written)? = writer.wait(timeout: 30) else { return XCTFail("the writer did not finish") }
        XCTAssertEqual(written.count, total)

        // The reference: everything from the start cursor, read by long-polls.
        let full = try drain(courier, since: start, count: total)
        XCTAssertEqual(full.notifications.count, total, "one notification per creation")
        XCTAssertEqual(full.notifications.compactMap { $0["qry"]?["rid"]?.stringValue }, written, "commit order")

        func nids(_ events: [ServerSentEvent]) -> [String] {
            events.compactMap { try? JSONValue.parse($0.data)["ck"]?["nid"]?.stringValue }
        }
        let fullNIDs = full.notifications.compactMap { $0["nid"]?.stringValue }
        XCTAssertEqual(Set(fullNIDs).count, total, "nid is unique")
        XCTAssertEqual(nids(early), Array(fullNIDs.prefix(early.count)))
        XCTAssertEqual(resumed.count, total - early.count, "every remaining notification after Last-Event-ID")
        XCTAssertEqual(nids(resumed), Array(fullNIDs.dropFirst(early.count)), "none missing, none repeated, in order")
        let ids = (early + resumed).compactMap(\.id)
        XCTAssertEqual(Set(ids).count, ids.count, "event ids (cursors) are distinct")
        XCTAssertEqual(ids.last, full.cursor, "the last event id is the long-poll's final cursor")

        // The same resumption by long-poll `since`.
        let polled = try drain(courier, since: resumeFrom, count: total - early.count)
        XCTAssertEqual(polled.notifications.compactMap { $0["nid"]?.stringValue }, Array(fullNIDs.dropFirst(early.count)))
        XCTAssertEqual(polled.cursor, full.cursor)

        // And each event id is a valid resumption point: resuming at event k yields k+1…
        let middle = resumed[resumed.count / 2]
        if let id = middle.id {
            let third = try openEventStream(courier, lastEventID: id)
            let next = third.nextEvent(timeout: 5)
            third.closeConnection()
            let index = early.count + resumed.count / 2
            XCTAssertEqual(next.flatMap { try? JSONValue.parse($0.data)["ck"]?["nid"]?.stringValue }, fullNIDs[index + 1])
        }
    }

    /// Each token is one device's channel, and every notification goes to every token of the user.
    func testEveryTokenOfTheUserGetsEveryNotification() throws {
        try subscribe(querySubscription("games", type: "Game"))
        let phone = try createCourier(), laptop = try createCourier()
        XCTAssertNotEqual(phone, laptop)
        let phoneStart = try startCursor(phone), laptopStart = try startCursor(laptop)
        let laptopStream = try openEventStream(laptop, lastEventID: laptopStart)
        XCTAssertTrue(laptopStream.waitForComment("connected", timeout: 5))
        let names = (0..<3).map { _ in newName("Game") }
        for name in names { try create(name, "Game") }
        XCTAssertEqual(try drain(phone, since: phoneStart, count: 3).notifications.compactMap { $0["qry"]?["rid"]?.stringValue }, names)
        var streamed: [String] = []
        for _ in 0..<3 {
            guard let event = laptopStream.nextEvent(timeout: 5) else { break }
            if let rid = try? JSONValue.parse(event.data)["ck"]?["qry"]?["rid"]?.stringValue { streamed.append(rid) }
        }
        XCTAssertEqual(streamed, names)
    }

    func testAnotherUsersChannelIsForbiddenAndTheirOwnStaysEmpty() throws {
        let bob = try daemon.createUser("bob")
        try createZone(zone, token: bob)
        try subscribe(["subscriptionID": "bob-db", "subscriptionType": "database"], token: bob)
        try subscribe(["subscriptionID": "alice-db", "subscriptionType": "database"],
                      querySubscription("games", type: "Game"))
        let aliceCourier = try createCourier()
        let bobCourier = try createCourier(token: bob)
        XCTAssertNotEqual(aliceCourier, bobCourier)
        let aliceStart = try startCursor(aliceCourier)
        let bobStart = try startCursor(bobCourier, token: bob)

        for accept in [nil, "text/event-stream"] {
            let headers = accept.map { [("Accept", $0)] } ?? []
            let answer = try daemon.request("GET", "\(aliceCourier)?timeout=0", token: bob, headers: headers, timeout: 5).parsed()
            XCTAssertTrue([403, 404].contains(answer.status), "Bob polling Alice's courier: \(answer.status) \(answer.body.serializedString())")
            XCTAssertTrue(["ACCESS_DENIED", "NOT_FOUND"].contains(answer.body["serverErrorCode"]?.stringValue ?? ""),
                          answer.body.serializedString())
        }
        // The URL itself is the credential (a capability): bare, it answers its owner's channel.
        let noCredentials = try daemon.request("GET", "\(aliceCourier)?timeout=0", timeout: 5).parsed()
        XCTAssertEqual(noCredentials.status, 200, noCredentials.body.serializedString())
        let badCredentials = try daemon.request("GET", "\(aliceCourier)?timeout=0", token: "not-a-token", timeout: 5).parsed()
        XCTAssertEqual(badCredentials.status, 401)
        let otherContainer = aliceCourier.replacingOccurrences(of: "/\(Self.container)/", with: "/iCloud.other/")
        let crossContainer = try daemon.request("GET", "\(otherContainer)?timeout=0", token: token, timeout: 5).parsed()
        XCTAssertTrue([403, 404].contains(crossContainer.status), "a token is bound to its container: \(crossContainer.status)")

        // Bob waits on his own channel, by long-poll and by event stream, while Alice writes.
        let bobStream = try openEventStream(bobCourier, lastEventID: bobStart, token: bob)
        XCTAssertTrue(bobStream.waitForComment("connected", timeout: 5))
        let bobPoll = background { [client] in try client.poll(bobCourier, since: bobStart, timeout: 3, token: bob) }
        for index in 0..<20 { try create(newName("Game"), "Game", ["name": .string("a\(index)")]) }
        XCTAssertEqual(try drain(aliceCourier, since: aliceStart, count: 40).notifications.count, 40, "Alice gets hers")
        guard case .success(let bobAnswer)? = bobPoll.wait(timeout: 10) else { return XCTFail("Bob's long-poll did not answer") }
        XCTAssertEqual(bobAnswer.notifications.count, 0, "Bob never sees Alice's notifications")
        XCTAssertNil(bobStream.nextEvent(timeout: 0.5), "nor does his event stream")
    }

    func testRolledBackAtomicBatchNotifiesNobody() throws {
        try subscribe(querySubscription("games", type: "Game"), ["subscriptionID": "db", "subscriptionType": "database"])
        let existing = newName("Game")
        try create(existing, "Game", ["name": "Catan"])
        let courier = try createCourier()
        let before = try startCursor(courier)

        let entries = try modify([
            ("create", record(newName("Game"), "Game", ["name": "new"])),
            ("forceDelete", ["recordName": .string(newName("Game"))]),
            ("create", record(existing, "Game")),  // EXISTS
        ])
        XCTAssertEqual(entries.compactMap { $0["serverErrorCode"]?.stringValue }, ["ATOMIC_ERROR", "ATOMIC_ERROR", "EXISTS"])
        let quiet = try poll(courier, since: before, timeout: 1)
        XCTAssertEqual(quiet.notifications.count, 0, "a rolled-back batch notifies nobody: \(quiet.notifications.map { $0.serializedString() })")

        let game = newName("Game")
        try create(game, "Game")
        let next = try poll(courier, since: before, timeout: 5)
        XCTAssertEqual(next.notifications.compactMap { $0["qry"]?["rid"]?.stringValue }, [game], "only the committed change")
        XCTAssertEqual(next.notifications.filter { $0["met"] != nil }.count, 1)
    }

    /// Deletions arrive as bare record names whose `Type|~|` prefix identifies the entity, whether
    /// direct, cascaded through DELETE_SELF, or by deleting the zone.
    func testEveryKindOfDeletionNamesItsTypeInTheRecordName() throws {
        let types = ["Game", "Match", "Player", "Score"]
        try subscribe(querySubscription("Game-deleted", type: "Game", firesOn: ["delete"]),
                      querySubscription("Match-deleted", type: "Match", firesOn: ["delete"]),
                      querySubscription("Player-deleted", type: "Player", firesOn: ["delete"]),
                      querySubscription("Score-deleted", type: "Score", firesOn: ["delete"]))
        let courier = try createCourier()
        let start = try startCursor(courier)
        func makeGraph() throws -> [String] {
            let names = types.map(newName)
            try modify([
                ("create", record(names[0], "Game", ["name": "Catan"])),
                ("create", record(names[1], "Match", ["game": deleteSelf(names[0])])),
                ("create", record(names[2], "Player", ["match": deleteSelf(names[1]), "seat": 1])),
                ("create", record(names[3], "Score", ["player": deleteSelf(names[2]), "value": 4.5])),
            ])
            return names
        }
        func check(_ notifications: [JSONValue], _ names: [String], _ how: String) {
            XCTAssertEqual(notifications.count, 4, "\(how): \(notifications.map { $0.serializedString() })")
            var seen: [String: String] = [:]
            for ck in notifications {
                guard let qry = ck["qry"], let rid = qry["rid"]?.stringValue, let sid = qry["sid"]?.stringValue else {
                    XCTFail("\(how): not a query notification: \(ck.serializedString())")
                    continue
                }
                XCTAssertEqual(qry["fo"]?.int64Value, 3, how)
                XCTAssertEqual(qry["af"]?.objectValue ?? [:], [:], "\(how): a deletion carries the record name only")
                let type = rid.components(separatedBy: "|~|").first ?? ""
                XCTAssertEqual(sid, "\(type)-deleted", "\(how): the prefix of \(rid) names the type its subscription watches")
                seen[type] = rid
            }
            XCTAssertEqual(seen, Dictionary(uniqueKeysWithValues: zip(types, names)), how)
        }

        let direct = try makeGraph()
        try modify([("forceDelete", ["recordName": .string(direct[3])])])
        try modify([("forceDelete", ["recordName": .string(direct[2])])])
        try modify([("forceDelete", ["recordName": .string(direct[1])])])
        try modify([("forceDelete", ["recordName": .string(direct[0])])])
        let afterDirect = try drain(courier, since: start, count: 4)
        check(afterDirect.notifications, direct, "direct deletions")

        let cascaded = try makeGraph()
        try modify([("forceDelete", ["recordName": .string(cascaded[0])])])
        let afterCascade = try drain(courier, since: afterDirect.cursor, count: 4)
        check(afterCascade.notifications, cascaded, "DELETE_SELF cascade from the Game")

        let zoned = try makeGraph()
        try deleteZone(zone)
        let afterZone = try drain(courier, since: afterCascade.cursor, count: 4)
        check(afterZone.notifications, zoned, "zone deletion")
        XCTAssertEqual(try poll(courier, since: afterZone.cursor, timeout: 1).notifications.count, 0, "nothing more")
    }

    func testNotificationsSurviveARestart() throws {
        try subscribe(querySubscription("games", type: "Game"))
        let courier = try createCourier()
        let start = try startCursor(courier)
        let names = (0..<3).map { _ in newName("Game") }
        for name in names { try create(name, "Game") }
        try daemon.restart()

        let after = try poll(courier, since: start, timeout: 5)
        XCTAssertEqual(after.notifications.compactMap { $0["qry"]?["rid"]?.stringValue }, names,
                       "written before the restart, read after it with the old cursor and the old courier URL")
        let stream = try openEventStream(courier, lastEventID: start)
        var replayed: [String] = []
        for _ in 0..<3 {
            guard let event = stream.nextEvent(timeout: 5) else { break }
            if let rid = try? JSONValue.parse(event.data)["ck"]?["qry"]?["rid"]?.stringValue { replayed.append(rid) }
        }
        XCTAssertEqual(replayed, names, "the event stream resumes across the restart too")
        let later = newName("Game")
        try create(later, "Game")
        let fresh = stream.nextEvent(timeout: 5)
        XCTAssertEqual(fresh.flatMap { try? JSONValue.parse($0.data)["ck"]?["qry"]?["rid"]?.stringValue }, later,
                       "subscriptions survive the restart")
        stream.closeConnection()
    }

    func testSIGTERMEndsOpenStreamsAndLongPollsQuicklyAndExitsZero() throws {
        let courier = try createCourier()
        let streams = try (0..<2).map { _ in try openEventStream(courier) }
        for stream in streams { XCTAssertTrue(stream.waitForComment("connected", timeout: 5)) }
        let start = try startCursor(courier)
        let polls = (0..<2).map { _ in background { [client] in try client.poll(courier, since: start, timeout: 30) } }
        Thread.sleep(forTimeInterval: 0.5)

        let stopping = Date()
        try daemon.stop()
        let shutdown = Date().timeIntervalSince(stopping)
        XCTAssertLessThan(shutdown, 5, "open streams and long-polls must not hold shutdown for its 10 s limit")
        for stream in streams {
            XCTAssertTrue(stream.waitForServerClose(timeout: 2), "the event stream ends when the daemon stops")
        }
        for waiting in polls {
            switch waiting.wait(timeout: 5) {
            case .success(let answer)?:
                XCTAssertEqual(answer.notifications.count, 0)
                XCTAssertLessThan(answer.elapsed, 10, "the long-poll ended at shutdown, not at its timeout")
            case .failure(let error)?:
                XCTFail("an in-flight long-poll must be answered, not cut: \(error)")
            case nil:
                XCTFail("the long-poll never returned")
            }
        }
    }
}
