import Foundation
import RecordClient
import RecordModel
import RecordServer
import RecordStore
import SQLiteRecordStore
import XCTest

/// Push through the in-process API, without sockets: the hub runs as it does in the daemon's
/// service group and hands notifications to in-memory connections (`RecordAPI.parkInMemory`).
final class InMemoryPushTests: XCTestCase {
    /// A long-poll through the in-process transport parks, and the next commit answers it.
    func testALongPollIsAnsweredByACommit() async throws {
        try await withPushAPI { fixture in
            let endpoint = ServerEndpoint(baseURL: URL(string: "http://\(InProcessTransport.host)")!, container: PushFixture.container,
                                          environment: "development", token: fixture.token)
            let client = RecordClient(endpoint: endpoint, transport: InProcessTransport(api: fixture.api))
            let channel = try await client.createNotificationChannel()
            let started = ContinuousClock.now
            async let page = client.pollNotifications(channel, since: nil, timeout: 30)
            try await fixture.waitForWaiters(1)
            try await fixture.save("Bench-1")
            let answered = try await page
            XCTAssertLessThan(ContinuousClock.now - started, .seconds(10), "answered by the commit, not at the timeout")
            XCTAssertEqual(answered.notifications.map(\.recordName), ["Bench-1"])
            XCTAssertNotNil(answered.cursor)
            try await fixture.waitForWaiters(0, "an answered long-poll is forgotten once its delivery is done")
        }
    }

    /// An event stream parked in memory receives two commits' notifications, in order.
    func testAnEventStreamReceivesTwoNotificationsInOrder() async throws {
        try await withPushAPI { fixture in
            let parking = try await fixture.courier(accept: "text/event-stream", query: [:])
            let stream = await fixture.api.parkInMemory(parking)
            try await fixture.save("Bench-1")
            try await fixture.save("Bench-2")
            var received: [(cursor: Int64, recordName: String?)] = []
            for await event in stream.events {
                guard case .notification(let id, let payload) = event else { continue }
                received.append((try NotificationCursor.decode(id), PushNotification(json: try JSONValue.parse(payload))?.recordName))
                if received.count == 2 { break }
            }
            XCTAssertEqual(received.map(\.recordName), ["Bench-1", "Bench-2"])
            XCTAssertLessThan(received[0].cursor, received[1].cursor, "each event's id is its cursor, increasing")
            XCTAssertEqual(fixture.api.pushHub.waiterCount, 1, "the stream stays parked")

            // The hub shutting down ends the stream.
            fixture.api.pushHub.close()
            for await _ in stream.events {}
            XCTAssertEqual(fixture.api.pushHub.waiterCount, 0)
        }
    }

    /// A long-poll nothing answers gets its empty answer at the timeout, and the hub forgets it.
    func testALongPollTimesOutWithItsEmptyAnswer() async throws {
        try await withPushAPI { fixture in
            let since = NotificationCursor.encode(0)
            let parking = try await fixture.courier(accept: nil, query: ["since": since, "timeout": "1"])
            let started = ContinuousClock.now
            let poll = await fixture.api.parkInMemory(parking)
            XCTAssertEqual(fixture.api.pushHub.waiterCount, 1)
            let answer = try JSONValue.parse(await poll.answer())
            XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(900), "answered at the timeout")
            XCTAssertEqual(answer["notifications"]?.arrayValue?.count, 0)
            XCTAssertEqual(answer["cursor"]?.stringValue, since, "the cursor the client sent")
            XCTAssertEqual(fixture.api.pushHub.waiterCount, 0, "a timed-out long-poll is forgotten")
        }
    }
}

/// A real store behind `RecordAPI`, with one user, a zone and a query subscription on it; the
/// API's push hub runs for the test's duration.
private struct PushFixture {
    let api: RecordAPI
    let responder: InProcessResponder
    let token: String
    static let container = "iCloud.bench"
    static let databasePath = "/database/1/\(container)/development/private"
    static let environmentPath = "/database/1/\(container)/development"

    func call(_ path: String, query: [String: String] = [:], body: JSONValue? = nil, accept: String? = nil) async throws -> InProcessResponder.Answer {
        var headers = [("Authorization", "Bearer \(token)")]
        if let accept { headers.append(("Accept", accept)) }
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let pairs = query.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
        return try await responder.respond(method: body == nil ? "GET" : "POST", uri: path + (pairs.isEmpty ? "" : "?" + pairs.joined(separator: "&")),
                                           headers: headers, body: body?.serialized() ?? [])
    }

    func post(_ path: String, _ body: JSONValue) async throws {
        let answer = try await call(path, body: body)
        let text = String(decoding: answer.body, as: UTF8.self)
        guard answer.status == 200, !text.contains("serverErrorCode") else { throw FixtureFailure("\(path): \(answer.status) \(text)") }
    }

    /// Saves a record of the subscribed type: one notification.
    func save(_ recordName: String) async throws {
        try await post(Self.databasePath + "/records/modify", [
            "zoneID": ["zoneName": "Bench"],
            "operations": [["operationType": "forceReplace", "record": [
                "recordName": .string(recordName), "recordType": "Bench", "fields": ["value": ["value": 1]],
            ]]],
        ])
    }

    /// A courier request on a new channel, which the API answers by parking.
    func courier(accept: String?, query: [String: String]) async throws -> PushParking {
        let created = try await call(Self.environmentPath + "/tokens/create", body: ["apnsEnvironment": "development"])
        guard let url = try JSONValue.parse(created.body)["webcourierURL"]?.stringValue, let path = URL(string: url)?.path else {
            throw FixtureFailure("tokens/create: \(String(decoding: created.body, as: UTF8.self))")
        }
        guard let parking = try await call(path, query: query, accept: accept).parking else { throw FixtureFailure("the courier request was not parked") }
        return parking
    }

    /// Waits (at most 5 s) until the hub has `count` parked connections.
    func waitForWaiters(_ count: Int, _ message: String = "", file: StaticString = #filePath, line: UInt = #line) async throws {
        for _ in 0..<500 where api.pushHub.waiterCount != count { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertEqual(api.pushHub.waiterCount, count, message, file: file, line: line)
    }
}

private struct FixtureFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` with a fixture whose hub runs beside it, then stops the hub and removes the store.
private func withPushAPI(_ body: @Sendable (PushFixture) async throws -> Void) async throws {
    let root = FaultScenario.temporaryRoot()
    defer { try? FileManager.default.removeItem(at: root) }
    let server = try SQLiteRecordStore(directory: root.appendingPathComponent("server").path)
    defer { server.close() }
    let storage = SQLiteStorage(server)
    let api = RecordAPI(store: storage, requestsPerSecond: 1_000_000, logger: FaultScenario.quietLogger)
    let fixture = PushFixture(api: api, responder: InProcessResponder(api: api), token: try await storage.createUser(name: "push").token)
    try await fixture.post(PushFixture.databasePath + "/zones/modify",
                           ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Bench"]]]]])
    try await fixture.post(PushFixture.databasePath + "/subscriptions/modify", ["operations": [["operationType": "create", "subscription": [
        "subscriptionID": "bench", "subscriptionType": "query", "zoneID": ["zoneName": "Bench"], "query": ["recordType": "Bench"],
        "firesOn": ["create", "update", "delete"],
    ]]]])
    try await withThrowingDiscardingTaskGroup { group in
        group.addTask { await api.pushHub.run() }
        try await body(fixture)
        api.pushHub.close()
    }
}
