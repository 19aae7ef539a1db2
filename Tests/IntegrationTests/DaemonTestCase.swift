import Foundation
import RecordModel
import Synchronization
import XCTest

/// Base class for tests against the real `scorebookd`: one daemon per test class (started on first
/// use, stopped with SIGTERM after the class, which must exit 0), users made through the real
/// `user create` subprocess, and request helpers that name the API's paths.
class DaemonTestCase: XCTestCase {
    static let container = "iCloud.scorebook.tests"
    private static let daemons = Mutex<[ObjectIdentifier: DaemonProcess]>([:])

    /// The class's shared daemon.
    var daemon: DaemonProcess {
        get throws {
            let key = ObjectIdentifier(type(of: self))
            let arguments = type(of: self).daemonArguments
            return try Self.daemons.withLock { daemons in
                if let running = daemons[key] { return running }
                let started = try DaemonProcess.start(extraArguments: arguments)
                daemons[key] = started
                return started
            }
        }
    }

    /// `serve` flags of the class's daemon beyond the store and port.
    class var daemonArguments: [String] { [] }

    override class func tearDown() {
        if let daemon = daemons.withLock({ $0.removeValue(forKey: ObjectIdentifier(self)) }) {
            do { try daemon.stop() } catch { XCTFail("shared daemon did not stop cleanly: \(error)") }
        }
        super.tearDown()
    }

    /// A user with a unique name and its token.
    func makeUser(_ prefix: String = "user") throws -> (userRecordName: String, token: String) {
        try daemon.createUserInfo("\(prefix)-\(UUID().uuidString.prefix(8).lowercased())")
    }

    /// `/database/1/{container}/{environment}/{database}/{operation}`.
    func path(_ operation: String, environment: String = "development", database: String = "private",
              container: String = DaemonTestCase.container) -> String
    {
        "/database/1/\(container)/\(environment)/\(database)/\(operation)"
    }

    /// POSTs `body` to an operation of the private database and parses the JSON answer.
    @discardableResult
    func call(_ operation: String, _ token: String?, _ body: JSONValue = [:], environment: String = "development") throws
        -> (status: Int, body: JSONValue)
    {
        try daemon.post(path(operation, environment: environment), token: token, json: body.serializedString())
    }

    /// Like `call`, but fails the test unless the answer is 200, and returns the body.
    @discardableResult
    func ok(_ operation: String, _ token: String?, _ body: JSONValue = [:], environment: String = "development",
            file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue
    {
        let answer = try call(operation, token, body, environment: environment)
        XCTAssertEqual(answer.status, 200, "\(operation): \(answer.body.serializedString().prefix(500))", file: file, line: line)
        return answer.body
    }

    /// Checks a whole-request error: the status, the code, and the contract's error dictionary.
    func assertError(_ answer: (status: Int, body: JSONValue), _ status: Int, _ code: String, _ message: String = "",
                     file: StaticString = #filePath, line: UInt = #line)
    {
        XCTAssertEqual(answer.status, status, "\(message) \(answer.body.serializedString().prefix(300))", file: file, line: line)
        XCTAssertEqual(answer.body["serverErrorCode"]?.stringValue, code, message, file: file, line: line)
        XCTAssertNotNil(answer.body["reason"]?.stringValue, "error dictionaries carry a reason \(message)", file: file, line: line)
        XCTAssertNotNil(answer.body["uuid"]?.stringValue, "whole-request errors carry a uuid \(message)", file: file, line: line)
    }

    func createZone(_ name: String, _ token: String) throws {
        let body = try ok("zones/modify", token, ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(name)]]]]])
        XCTAssertNil(body["zones"]?.arrayValue?.first?["serverErrorCode"], body.serializedString())
    }

    /// A modify request body; `zone` nil leaves `zoneID` out.
    func modifyBody(_ operations: [(String, JSONValue)], zone: String? = "ScorebookData", atomic: Bool? = nil) -> JSONValue {
        var body: [String: JSONValue] = [
            "operations": .array(operations.map { ["operationType": .string($0.0), "record": $0.1] }),
        ]
        if let zone { body["zoneID"] = ["zoneName": .string(zone)] }
        if let atomic { body["atomic"] = .bool(atomic) }
        return .object(body)
    }

    func record(_ name: String, _ type: String? = nil, _ fields: [String: JSONValue] = [:], tag: String? = nil) -> JSONValue {
        var members: [String: JSONValue] = ["recordName": .string(name), "fields": .object(fields)]
        if let type { members["recordType"] = .string(type) }
        if let tag { members["recordChangeTag"] = .string(tag) }
        return .object(members)
    }

    /// The `records` entries of a modify answer.
    @discardableResult
    func modify(_ token: String, _ operations: [(String, JSONValue)], zone: String? = "ScorebookData", atomic: Bool? = nil,
                environment: String = "development", file: StaticString = #filePath, line: UInt = #line) throws -> [JSONValue]
    {
        let body = try ok("records/modify", token, modifyBody(operations, zone: zone, atomic: atomic), environment: environment,
                          file: file, line: line)
        return body["records"]?.arrayValue ?? []
    }

    /// The live record, or nil when the lookup answers NOT_FOUND for it.
    func lookup(_ token: String, _ name: String, zone: String = "ScorebookData", environment: String = "development",
                file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue?
    {
        let body = try ok("records/lookup", token, ["zoneID": ["zoneName": .string(zone)], "records": [["recordName": .string(name)]]],
                          environment: environment, file: file, line: line)
        let entry = body["records"]?.arrayValue?.first
        if entry?["serverErrorCode"]?.stringValue == "NOT_FOUND" { return nil }
        return entry
    }

    /// Follows `records/changes` from `token` until `moreComing` is false (bounded), folding pages
    /// into the latest state per record (nil = tombstone).
    func fetchChanges(_ token: String, zone: String = "ScorebookData", from syncToken: String? = nil, resultsLimit: Int? = nil,
                      file: StaticString = #filePath, line: UInt = #line) throws -> (state: [String: JSONValue?], syncToken: String)
    {
        var state: [String: JSONValue?] = [:]
        var next = syncToken
        for _ in 0..<1000 {
            var body: [String: JSONValue] = ["zoneID": ["zoneName": .string(zone)]]
            if let next { body["syncToken"] = .string(next) }
            if let resultsLimit { body["resultsLimit"] = .int(Int64(resultsLimit)) }
            let page = try ok("records/changes", token, .object(body), file: file, line: line)
            for entry in page["records"]?.arrayValue ?? [] {
                guard let name = entry["recordName"]?.stringValue else { continue }
                state[name] = entry["deleted"]?.boolValue == true ? .some(nil) : .some(entry)
            }
            guard let token = page["syncToken"]?.stringValue else {
                XCTFail("no syncToken in \(page.serializedString())", file: file, line: line)
                throw DaemonError("no syncToken")
            }
            next = token
            if page["moreComing"]?.boolValue != true { return (state, token) }
        }
        throw DaemonError("records/changes never stopped saying moreComing")
    }

    /// The daemon still answers `/health`.
    func assertHealthy(file: StaticString = #filePath, line: UInt = #line) throws {
        let answer = try daemon.get("/health", token: nil)
        XCTAssertEqual(answer.status, 200, file: file, line: line)
        XCTAssertEqual(answer.body, ["status": "ok"], file: file, line: line)
        XCTAssertTrue(try daemon.isRunning, "the daemon is still running", file: file, line: line)
    }
}
