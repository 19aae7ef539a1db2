import Foundation
import RecordModel
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Shared set-up of the push tests: a real `scorebookd` (through `DaemonProcess`), a user, and
/// helpers for zones, records, subscriptions and delivery channels.
class PushTestCase: XCTestCase, PushCalls {
    static let container = "iCloud.scorebook.push"
    let zone = "ScorebookData"

    var daemon: DaemonProcess!
    var token: String!

    override func setUpWithError() throws {
        daemon = try DaemonProcess.start()
        token = try daemon.createUser("alice")
    }

    override func tearDownWithError() throws {
        daemon?.kill()
        daemon = nil
    }

    /// The helpers as a value a background thread may use (the test case is not `Sendable`).
    var client: PushClient { PushClient(daemon: daemon, token: token, zone: zone) }

    /// Runs `body` on a background thread; `wait` returns its result (or nil if it did not finish in time).
    func background<T: Sendable>(_ body: @escaping @Sendable () throws -> T) -> BackgroundResult<T> {
        let result = BackgroundResult<T>()
        let thread = Thread { result.finish(Result { try body() }) }
        thread.start()
        return result
    }
}

/// What the push helpers need: the daemon and the user's token. The test case is one; a
/// `PushClient` is a `Sendable` copy for background threads.
protocol PushCalls {
    var daemon: DaemonProcess! { get }
    var token: String! { get }
    var zone: String { get }
}

struct PushClient: PushCalls, Sendable {
    let daemon: DaemonProcess!
    let token: String!
    let zone: String
}

extension PushCalls {
    func path(_ operation: String, environment: String = "development", container: String? = nil) -> String {
        "/database/1/\(container ?? PushTestCase.container)/\(environment)/private/\(operation)"
    }

    /// POSTs to an operation of the private database and returns the JSON answer; a status other
    /// than 200 fails the test by throwing.
    @discardableResult
    func call(_ operation: String, _ body: JSONValue, token: String? = nil, environment: String = "development",
              file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue
    {
        let answer = try daemon.post(path(operation, environment: environment), token: token ?? self.token, json: body.serializedString())
        guard answer.status == 200 else {
            XCTFail("\(operation) answered \(answer.status): \(answer.body.serializedString())", file: file, line: line)
            throw DaemonError("\(operation) answered \(answer.status)")
        }
        return answer.body
    }

    func createZone(_ name: String, token: String? = nil) throws {
        try call("zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(name)]]]]],
                 token: token)
    }

    func deleteZone(_ name: String) throws {
        try call("zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": .string(name)]]]]])
    }

    func newName(_ type: String) -> String { "\(type)|~|\(UUID().uuidString)" }

    /// A wire record from plain field values; a value that is a `{"recordName", …}` object is sent
    /// as a `REFERENCE`, anything else with its type left to inference.
    func record(_ name: String, _ type: String, _ fields: [String: JSONValue] = [:], tag: String? = nil) -> JSONValue {
        let wireFields = fields.mapValues { value -> JSONValue in
            value["recordName"] != nil ? ["value": value, "type": "REFERENCE"] : ["value": value]
        }
        var members: [String: JSONValue] = ["recordName": .string(name), "recordType": .string(type), "fields": .object(wireFields)]
        if let tag { members["recordChangeTag"] = .string(tag) }
        return .object(members)
    }

    func deleteSelf(_ target: String) -> JSONValue { ["recordName": .string(target), "action": "DELETE_SELF"] }

    /// `records/modify` in `zone`; returns the per-operation entries.
    @discardableResult
    func modify(_ operations: [(String, JSONValue)], zone: String? = nil, atomic: Bool = true, token: String? = nil,
                file: StaticString = #filePath, line: UInt = #line) throws -> [JSONValue]
    {
        let body: JSONValue = [
            "zoneID": ["zoneName": .string(zone ?? self.zone)], "atomic": .bool(atomic),
            "operations": .array(operations.map { ["operationType": .string($0.0), "record": $0.1] }),
        ]
        return try call("records/modify", body, token: token, file: file, line: line)["records"]?.arrayValue ?? []
    }

    /// Creates a record and fails the test (by throwing) unless it was saved.
    func create(_ name: String, _ type: String, _ fields: [String: JSONValue] = [:], zone: String? = nil, token: String? = nil,
                file: StaticString = #filePath, line: UInt = #line) throws
    {
        let entries = try modify([("create", record(name, type, fields))], zone: zone, token: token, file: file, line: line)
        guard entries.first?["recordChangeTag"]?.stringValue != nil else {
            XCTFail("create \(name): \(entries.map { $0.serializedString() })", file: file, line: line)
            throw DaemonError("create failed")
        }
    }

    func subscribe(_ subscriptions: JSONValue..., token: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws {
        try subscribe(contentsOf: subscriptions, token: token, file: file, line: line)
    }

    func subscribe(contentsOf subscriptions: [JSONValue], token: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws {
        let answer = try call("subscriptions/modify", [
            "operations": .array(subscriptions.map { ["operationType": "create", "subscription": $0] }),
        ], token: token, file: file, line: line)
        for entry in answer["subscriptions"]?.arrayValue ?? [] where entry["serverErrorCode"] != nil {
            XCTFail("subscription refused: \(entry.serializedString())", file: file, line: line)
            throw DaemonError("subscription refused")
        }
    }

    func querySubscription(_ id: String, type: String, firesOn: [String] = ["create", "update", "delete"],
                           filterBy: [JSONValue] = [], desiredKeys: [String] = [], zone: String? = nil) -> JSONValue
    {
        [
            "subscriptionID": .string(id), "subscriptionType": "query", "zoneID": ["zoneName": .string(zone ?? self.zone)],
            "query": ["recordType": .string(type), "filterBy": .array(filterBy)],
            "firesOn": .array(firesOn.map { .string($0) }), "firesOnce": false,
            "notificationInfo": ["desiredKeys": .array(desiredKeys.map { .string($0) })],
        ]
    }

    /// `tokens/create`: returns the courier URL's path (host and port are the daemon's).
    func createCourier(token: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let answer = try daemon.post("/database/1/\(PushTestCase.container)/development/tokens/create", token: token ?? self.token,
                                     json: #"{"apnsEnvironment": "development"}"#)
        guard answer.status == 200, let text = answer.body["webcourierURL"]?.stringValue, let url = URL(string: text),
            let apnsToken = answer.body["apnsToken"]?.stringValue
        else {
            XCTFail("tokens/create answered \(answer.status): \(answer.body.serializedString())", file: file, line: line)
            throw DaemonError("tokens/create failed")
        }
        XCTAssertEqual(answer.body["apnsEnvironment"], "development", file: file, line: line)
        XCTAssertEqual(url.scheme, "http", file: file, line: line)
        XCTAssertEqual(url.port, daemon.port, "the courier URL names the daemon's own address", file: file, line: line)
        XCTAssertEqual(url.path, "/database/1/\(PushTestCase.container)/development/courier/\(apnsToken)", file: file, line: line)
        return url.path
    }

    /// A long-poll of the courier: the answer, its notifications' `ck` dictionaries and cursor.
    func poll(_ courier: String, since: String? = nil, timeout: Int? = nil, token: String? = nil, httpTimeout: TimeInterval = 70,
              file: StaticString = #filePath, line: UInt = #line) throws -> (notifications: [JSONValue], cursor: String, elapsed: TimeInterval)
    {
        var query: [String] = []
        if let since { query.append("since=\(percentEncoded(since))") }
        if let timeout { query.append("timeout=\(timeout)") }
        let target = query.isEmpty ? courier : "\(courier)?\(query.joined(separator: "&"))"
        let started = Date()
        let answer = try daemon.request("GET", target, token: token ?? self.token, timeout: httpTimeout).parsed()
        let elapsed = Date().timeIntervalSince(started)
        guard answer.status == 200, let list = answer.body["notifications"]?.arrayValue, let cursor = answer.body["cursor"]?.stringValue
        else {
            XCTFail("long-poll answered \(answer.status): \(answer.body.serializedString())", file: file, line: line)
            throw DaemonError("long-poll failed")
        }
        let cks = list.map { $0["ck"] ?? .null }
        for ck in cks where ck.objectValue == nil { XCTFail("a notification without ck", file: file, line: line) }
        return (cks, cursor, elapsed)
    }

    /// Every notification after `since`, polling with `timeout=0` until `count` have arrived or
    /// `deadline` seconds pass. Returns each with the cursor of the poll that delivered it last.
    func drain(_ courier: String, since: String, count: Int, deadline: TimeInterval = 15) throws -> (notifications: [JSONValue], cursor: String) {
        var all: [JSONValue] = []
        var cursor = since
        let end = Date().addingTimeInterval(deadline)
        for _ in 0..<1000 where all.count < count && Date() < end {
            let answer = try poll(courier, since: cursor, timeout: 1)
            all += answer.notifications
            cursor = answer.cursor
        }
        return (all, cursor)
    }

    /// The cursor a fresh client starts from: a `timeout=0` poll with an empty `since` (without
    /// one, a poll is answered one bare notification at a time, as CloudKit JS reads it).
    func startCursor(_ courier: String, token: String? = nil) throws -> String {
        let answer = try poll(courier, since: "", timeout: 0, token: token)
        XCTAssertEqual(answer.notifications.count, 0, "a new channel has no past")
        return answer.cursor
    }

    /// `target`'s `scorebookd_waiters` from `/metrics`: its parked long-polls and event streams.
    func waiterCount(on target: DaemonProcess) throws -> Int {
        let metrics = try target.request("GET", "/metrics").text
        return metrics.split(separator: "\n").first { $0.hasPrefix("scorebookd_waiters ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? 0
    }

    /// Waits until `target` has at least `count` connections parked (a long-poll parks once its
    /// first read found nothing new, after its head went out), or `within` seconds pass; returns
    /// how many it last had.
    func waitForWaiters(_ count: Int, on target: DaemonProcess, within: TimeInterval = 10) throws -> Int {
        let end = Date().addingTimeInterval(within)
        var waiters = try waiterCount(on: target)
        for _ in 0..<1000 where waiters < count && Date() < end {
            Thread.sleep(forTimeInterval: 0.02)
            waiters = try waiterCount(on: target)
        }
        return waiters
    }

    func percentEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    func openEventStream(_ courier: String, lastEventID: String? = nil, token: String? = nil, headers: [(String, String)] = []) throws
        -> EventStreamClient
    {
        try EventStreamClient(port: daemon.port, path: courier, token: token ?? self.token, lastEventID: lastEventID, headers: headers)
    }
}

/// The outcome of work done on a background thread, waited for with a deadline.
final class BackgroundResult<T: Sendable>: Sendable {
    private struct Outcome {
        var result: Result<T, any Error>?
        var finishedAt: Date?
    }

    private let outcome = WaitableBox(Outcome())

    var finishedAt: Date? { outcome.value.finishedAt }

    func finish(_ value: Result<T, any Error>) {
        outcome.update { $0 = Outcome(result: value, finishedAt: Date()) }
    }

    func wait(timeout: TimeInterval) -> Result<T, any Error>? {
        outcome.wait(until: Date().addingTimeInterval(timeout)) { $0.result != nil }.result
    }
}

/// One Server-Sent Event: its `id:`, `event:` and `data:` lines.
struct ServerSentEvent {
    var id: String?
    var event: String?
    var data: String
}

/// A minimal Server-Sent Events client over a loopback socket: sends one GET with
/// `Accept: text/event-stream`, decodes the chunked body as it arrives and splits it into events
/// and comments. Every read is bounded by a deadline, so a test never hangs on it.
final class EventStreamClient {
    private var fd: Int32
    private var raw: [UInt8] = []
    private var body: [UInt8] = []
    private var headerParsed = false
    private var chunked = false
    private(set) var status = 0
    private(set) var headers: [String: String] = [:]
    /// Comment lines seen so far (without the leading colon), in order.
    private(set) var comments: [String] = []
    private(set) var isClosedByServer = false
    private var pendingEvents: [ServerSentEvent] = []

    init(port: Int, path: String, token: String?, lastEventID: String?, headers: [(String, String)] = []) throws {
        fd = try RawHTTP.connectLoopback(port: port)
        var head = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if let lastEventID { head += "Last-Event-ID: \(lastEventID)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else {
                close(fd)
                throw DaemonError("cannot send the request: errno \(errno)")
            }
            offset += written
        }
    }

    deinit { closeConnection() }

    /// Closes the connection from the client's side (a device going away).
    func closeConnection() {
        if fd >= 0 {
            close(fd)
            fd = -1
        }
    }

    /// Reads until the response head has arrived; returns the status (0 if none in time).
    @discardableResult
    func waitForHead(timeout: TimeInterval) -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        while !headerParsed && readSome(until: deadline) {}
        return status
    }

    /// The whole body read so far, when the answer is not a stream (an error's JSON).
    func readWholeBody(timeout: TimeInterval) -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        while !isClosedByServer && readSome(until: deadline) {
            if let length = headers["content-length"].flatMap(Int.init), body.count >= length { break }
        }
        return body
    }

    /// The next event (comments are collected, not returned), or nil if none arrives in time or
    /// the server closed the stream.
    func nextEvent(timeout: TimeInterval) -> ServerSentEvent? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            parseEvents()
            if !pendingEvents.isEmpty { return pendingEvents.removeFirst() }
            if isClosedByServer || !readSome(until: deadline) { return nil }
        }
    }

    /// Waits until a comment line equal to `text` has been seen.
    func waitForComment(_ text: String, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            parseEvents()
            if comments.contains(text) { return true }
            if isClosedByServer || !readSome(until: deadline) { return false }
        }
    }

    /// Waits until the server closes the stream; false if it is still open at the deadline.
    func waitForServerClose(timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !isClosedByServer {
            if !readSome(until: deadline) { return isClosedByServer }
        }
        parseEvents()
        return true
    }

    /// One read, waiting at most until `deadline`; false when nothing more can come in time.
    private func readSome(until deadline: Date) -> Bool {
        guard fd >= 0, !isClosedByServer else { return false }
        let remaining = deadline.timeIntervalSinceNow
        guard remaining > 0 else { return false }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, Int32(min(remaining, 60) * 1000) + 1)
        if ready < 0 { return errno == EINTR }
        if ready == 0 { return false }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            raw.append(contentsOf: buffer[0..<count])
            decode()
            return true
        }
        if count < 0 && errno == EINTR { return true }
        isClosedByServer = true
        decode()
        return true
    }

    /// Moves complete bytes from `raw` (head, then chunks) into `body`.
    private func decode() {
        if !headerParsed {
            guard let end = Self.find([13, 10, 13, 10], in: raw, from: 0) else { return }
            let lines = String(decoding: raw[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
            let parts = lines[0].split(separator: " ")
            status = parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            chunked = headers["transfer-encoding"]?.lowercased().contains("chunked") ?? false
            raw.removeFirst(end + 4)
            headerParsed = true
        }
        guard chunked else {
            body += raw
            raw.removeAll()
            return
        }
        while let lineEnd = Self.find([13, 10], in: raw, from: 0) {
            let sizeText = String(decoding: raw[0..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { return }
            if size == 0 {
                isClosedByServer = true
                raw.removeAll()
                return
            }
            let start = lineEnd + 2
            guard raw.count >= start + size + 2 else { return }
            body += raw[start..<start + size]
            raw.removeFirst(start + size + 2)
        }
    }

    /// Splits complete events (terminated by a blank line) off the body.
    private func parseEvents() {
        while let end = Self.find([10, 10], in: body, from: 0) {
            let block = String(decoding: body[0..<end], as: UTF8.self)
            body.removeFirst(end + 2)
            var event = ServerSentEvent(id: nil, event: nil, data: "")
            var dataLines: [String] = []
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(":") {
                    comments.append(line.dropFirst().trimmingCharacters(in: .whitespaces))
                    continue
                }
                let field: Substring, value: Substring
                if let colon = line.firstIndex(of: ":") {
                    field = line[..<colon]
                    var rest = line[line.index(after: colon)...]
                    if rest.hasPrefix(" ") { rest = rest.dropFirst() }
                    value = rest
                } else {
                    (field, value) = (line, "")
                }
                switch field {
                case "id": event.id = String(value)
                case "event": event.event = String(value)
                case "data": dataLines.append(String(value))
                default: break
                }
            }
            if event.id != nil || event.event != nil || !dataLines.isEmpty {
                event.data = dataLines.joined(separator: "\n")
                pendingEvents.append(event)
            }
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= haystack.count {
            if haystack[index] == needle[0] && Array(haystack[index..<index + needle.count]) == needle { return index }
            index += 1
        }
        return nil
    }
}
