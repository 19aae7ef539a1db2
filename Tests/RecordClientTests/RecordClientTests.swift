import Foundation
import RecordClient
import RecordModel
import Synchronization
import XCTest

/// The client's requests and its reading of answers, with a transport that answers from a
/// script instead of a socket.
final class RecordClientTests: XCTestCase {
    final class ScriptedTransport: HTTPTransport {
        private let script: Mutex<(answers: [HTTPResponse], requests: [HTTPRequest])>

        init(_ answers: [HTTPResponse]) { script = Mutex((answers, [])) }

        var requests: [HTTPRequest] { script.withLock { $0.requests } }

        func send(_ request: HTTPRequest) async throws -> HTTPResponse {
            try script.withLock { script throws -> HTTPResponse in
                script.requests.append(request)
                guard !script.answers.isEmpty else { throw RecordClientError.unreachable("no scripted answer left") }
                return script.answers.removeFirst()
            }
        }
    }

    let zone = ZoneID(zoneName: "ScorebookData")

    func client(_ answers: [String], status: Int = 200) -> (RecordClient, ScriptedTransport) {
        let transport = ScriptedTransport(answers.map { HTTPResponse(status: status, body: Array($0.utf8)) })
        let endpoint = ServerEndpoint(baseURL: URL(string: "http://127.0.0.1:9")!, container: "iCloud.scorebook",
                                      environment: "production", token: "secret")
        return (RecordClient(endpoint: endpoint, transport: transport), transport)
    }

    func testModifySendsTheContractsShapeAndReadsEachResult() async throws {
        let (client, transport) = client([
            #"{"records":[{"recordName":"Game|~|A","recordType":"Game","recordChangeTag":"t2","fields":{"name":{"value":"Go","type":"STRING"}}},"#
                + #"{"recordName":"Game|~|B","deleted":true},"#
                + #"{"recordName":"Game|~|C","serverErrorCode":"CONFLICT","reason":"stale","serverRecord":{"recordName":"Game|~|C","recordType":"Game","recordChangeTag":"t9","fields":{}}}]}"#,
        ])
        var update = Record(recordName: "Game|~|A", recordType: "Game", fields: ["name": .string("Go")], recordChangeTag: "t1")
        update.removedFieldNames = ["notes"]
        let results = try await client.modifyRecords(zoneID: zone, operations: [
            .update(update), .forceDelete("Game|~|B"), .create(Record(recordName: "Game|~|C", recordType: "Game")),
        ])
        let request = try XCTUnwrap(transport.requests.first)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.url.path, "/database/1/iCloud.scorebook/production/private/records/modify")
        XCTAssertEqual(request.headers["Authorization"], "Bearer secret")
        let body = try JSONValue.parse(request.body ?? [])
        XCTAssertEqual(body["zoneID"]?["zoneName"], "ScorebookData")
        let operations = try XCTUnwrap(body["operations"]?.arrayValue)
        XCTAssertEqual(operations.map { $0["operationType"] }, ["update", "forceDelete", "create"])
        XCTAssertEqual(operations[0]["record"]?["recordChangeTag"], "t1")
        XCTAssertEqual(operations[0]["record"]?["fields"]?["notes"], ["value": .null], "a removed field is sent as null")

        guard case .saved(let saved) = results[0] else { return XCTFail("saved") }
        XCTAssertEqual(saved.recordChangeTag, "t2")
        XCTAssertEqual(results[1], .deleted(recordName: "Game|~|B"))
        guard case .failed(let error) = results[2] else { return XCTFail("failed") }
        XCTAssertEqual(error.code, .conflict)
        XCTAssertEqual(error.serverRecord?["recordChangeTag"], "t9")
    }

    func testWholeRequestErrorsCarryTheServersCodeAndRetryAfter() async throws {
        let (client, _) = client([#"{"uuid":"u","serverErrorCode":"THROTTLED","reason":"slow down","retryAfter":3}"#], status: 429)
        do {
            _ = try await client.fetchZoneChanges(zoneID: zone, syncToken: nil)
            XCTFail("expected an error")
        } catch let error as RecordClientError {
            XCTAssertEqual(error.serverErrorCode, .throttled)
            XCTAssertEqual(error.retryAfter, 3)
        }
    }

    /// A tombstone's `modified` names who deleted; a tombstone without one (an older server) names no one.
    func testATombstoneKeepsItsDeleter() async throws {
        let (client, _) = client([
            #"{"zones":[{"zoneID":{"zoneName":"ScorebookData"},"syncToken":"dG9r","moreComing":false,"records":["#
                + #"{"recordName":"Match|~|M","recordType":"Match","deleted":true,"#
                + #""modified":{"timestamp":1763800005000,"userRecordName":"_bob","deviceID":"phone"}},"#
                + #"{"recordName":"Match|~|N","recordType":"Match","deleted":true}]}]}"#,
        ])
        let page = try await client.fetchZoneChanges(zoneID: zone, syncToken: nil)
        XCTAssertEqual(page.changes, [.deleted(recordName: "Match|~|M", recordType: "Match", deletedBy: "_bob"),
                                      .deleted(recordName: "Match|~|N", recordType: "Match", deletedBy: nil)])
    }

    func testChangeFeedPagesAndPerZoneErrors() async throws {
        let (client, transport) = client([
            #"{"zones":[{"zoneID":{"zoneName":"ScorebookData"},"syncToken":"dG9r","moreComing":true,"records":["#
                + #"{"recordName":"Game|~|A","recordType":"Game","recordChangeTag":"t","fields":{}},{"recordName":"Match|~|M","deleted":true}]}]}"#,
            #"{"zones":[{"zoneID":{"zoneName":"ScorebookData"},"serverErrorCode":"CHANGE_TOKEN_EXPIRED","reason":"too old"}]}"#,
        ])
        let page = try await client.fetchZoneChanges(zoneID: zone, syncToken: "b2xk")
        XCTAssertEqual(page.syncToken, "dG9r")
        XCTAssertTrue(page.moreComing)
        XCTAssertEqual(page.changes.map(\.recordName), ["Game|~|A", "Match|~|M"])
        XCTAssertEqual(page.changes.last, .deleted(recordName: "Match|~|M", recordType: nil))
        let sent = try JSONValue.parse(transport.requests[0].body ?? [])
        XCTAssertEqual(sent["zones"]?.arrayValue?.first?["syncToken"], "b2xk")
        do {
            _ = try await client.fetchZoneChanges(zoneID: zone, syncToken: "dG9r")
            XCTFail("expected CHANGE_TOKEN_EXPIRED")
        } catch let error as RecordClientError {
            XCTAssertEqual(error.serverErrorCode, .changeTokenExpired)
        }
    }

    func testLongPollUsesTheCourierURLWithCursorAndTimeout() async throws {
        let (client, transport) = client([
            #"{"notifications":[{"ck":{"cid":"iCloud.scorebook","nid":"n1","qry":{"rid":"Game|~|A","zid":"ScorebookData","dbs":2,"fo":3,"sid":"s"}}}],"cursor":"c+2"}"#,
        ])
        let channel = NotificationChannel(apnsToken: "tok", webcourierURL: "http://127.0.0.1:9/courier/tok")
        let page = try await client.pollNotifications(channel, since: "c+1", timeout: 90)
        let request = try XCTUnwrap(transport.requests.first)
        XCTAssertEqual(request.method, "GET")
        XCTAssertEqual(request.url.path, "/courier/tok")
        XCTAssertTrue(request.url.query?.contains("since=c%2B1") ?? false, request.url.absoluteString)
        XCTAssertTrue(request.url.query?.contains("timeout=60") ?? false, "capped at 60 s")
        XCTAssertEqual(request.headers["Authorization"], "Bearer secret")
        XCTAssertEqual(page.cursor, "c+2")
        XCTAssertEqual(page.notifications.first?.recordName, "Game|~|A")
        XCTAssertEqual(page.notifications.first?.reason, .deleted)
        XCTAssertEqual(page.notifications.first?.kind, .query)
    }
}
