import Foundation
import Logging
import RecordModel
import RecordServer
import RecordStore
import SQLiteRecordStore
import Synchronization
import XCTest

/// The daemon's router in process, where no operation runs: a path no route takes, the
/// operations a database does not have, and asset URLs, all answered by the one error path with
/// the request's own id, and logged and counted by the one request-log middleware.
final class RouterTests: XCTestCase {
    /// A store in a directory of its own, removed with it when the test ends.
    private func withStore(_ body: (SQLiteStorage) async throws -> Void) async throws {
        let root = FaultScenario.temporaryRoot()
        let server = try SQLiteRecordStore(directory: root.appendingPathComponent("server").path)
        defer {
            server.close()
            try? FileManager.default.removeItem(at: root)
        }
        try await body(SQLiteStorage(server))
    }

    func testEveryAnswerComesThroughTheOneErrorPathAndIsLoggedAndCounted() async throws {
        try await withStore { try await checkEveryAnswerComesThroughTheOneErrorPath(storage: $0) }
    }

    private func checkEveryAnswerComesThroughTheOneErrorPath(storage: SQLiteStorage) async throws {
        let lines = LogLines()
        var logger = Logger(label: "router") { _ in LogLines.Handler(lines: lines) }
        logger.logLevel = .info
        let router = InProcessResponder(api: RecordAPI(store: storage, logger: logger))
        let bearer = [("Authorization", "Bearer \(try await storage.createUser(name: "ada").token)")]
        let base = "/database/1/iCloud.x/development"
        func error(_ method: String, _ uri: String, headers: [(String, String)] = []) async throws -> (status: Int, json: JSONValue) {
            let answer = try await router.respond(method: method, uri: uri, headers: headers)
            return (answer.status, try JSONValue.parse(answer.body))
        }

        // A path no route takes: the API's 404 dictionary, never the framework's plain 404.
        var answer = try await error("GET", "/nowhere")
        XCTAssertEqual(answer.status, 404)
        XCTAssertEqual(answer.json["serverErrorCode"], "NOT_FOUND")
        XCTAssertEqual(answer.json["reason"], "no such endpoint: /nowhere")

        // An operation a database does not have: the caller is authenticated first, then (private
        // and shared) the body is read, so a GET is told to POST, then it is NOT_FOUND.
        answer = try await error("POST", "\(base)/private/records/nothing")
        XCTAssertEqual(answer.json["serverErrorCode"], "AUTHENTICATION_REQUIRED")
        answer = try await error("GET", "\(base)/private/records", headers: bearer)
        XCTAssertEqual(answer.json["reason"], "records needs POST")
        answer = try await error("POST", "\(base)/shared/records/nothing", headers: bearer)
        XCTAssertEqual(answer.status, 404)
        XCTAssertEqual(answer.json["reason"], "unknown operation 'records/nothing'")
        answer = try await error("POST", "/device/1/iCloud.x/development/tokens/nothing", headers: bearer)
        XCTAssertEqual(answer.json["reason"], "unknown operation 'tokens/nothing'")
        answer = try await error("POST", "\(base)/public/zones/nothing", headers: bearer)
        XCTAssertEqual(answer.status, 400)
        XCTAssertEqual(answer.json["reason"], "the public database is not supported yet; use private")
        answer = try await error("POST", "\(base)/attic/records/modify", headers: bearer)
        XCTAssertEqual(answer.json["reason"], "no such database 'attic'")
        answer = try await error("POST", "/database/1/iCloud.x/staging/private/records/modify", headers: bearer)
        XCTAssertEqual(answer.json["reason"], "environment must be development or production")

        // Asset bytes: their errors are every route's, with the request's id, logged and counted.
        answer = try await error("GET", "/assets/1/download/nonsense")
        XCTAssertEqual(answer.status, 404)
        let uuid = try XCTUnwrap(answer.json["uuid"]?.stringValue)
        XCTAssertTrue(lines.all.contains { $0.contains("request=\(uuid)") && $0.contains("operation=assets/get") }, "\(lines.all)")
        answer = try await error("GET", "/assets/1/upload/nonsense")
        XCTAssertEqual(answer.json["reason"], "upload with POST")

        // The metrics name each request by its route, never by its path.
        let metrics = String(decoding: try await router.respond(method: "GET", uri: "/metrics").body, as: UTF8.self)
        for counted in [#"operation="assets/get",status="404""#, #"operation="assets/put",status="400""#,
                        #"operation="other",status="404""#, #"operation="records/modify",status="400""#] {
            XCTAssertTrue(metrics.contains(counted), "\(counted) in \(metrics)")
        }
        XCTAssertFalse(metrics.contains("nothing") || metrics.contains("nowhere") || metrics.contains("attic"), metrics)
    }

    /// The scheme's name in any case, and spaces and tabs around the token, as HTTP allows; each
    /// answer's `uuid` is its own.
    func testTheBearerSchemeInAnyCaseAndBlanksAroundTheToken() async throws {
        try await withStore { try await checkTheBearerScheme(storage: $0) }
    }

    private func checkTheBearerScheme(storage: SQLiteStorage) async throws {
        let router = InProcessResponder(api: RecordAPI(store: storage, logger: Logger(label: "router")))
        let token = try await storage.createUser(name: "ada").token
        let list = "/database/1/iCloud.x/development/private/zones/list"
        for header in ["Bearer \(token)", "bEaReR \t \(token) \t ", "bearer  \(token)\t"] {
            let answer = try await router.respond(method: "POST", uri: list, headers: [("Authorization", header)])
            XCTAssertEqual(answer.status, 200, "\(header.debugDescription): \(String(decoding: answer.body, as: UTF8.self))")
        }
        var uuids = Set<String>()
        for header in ["Bearer x\(token)", "Bearer \(token) extra", "Basic \(token)"] {
            let answer = try await router.respond(method: "POST", uri: list, headers: [("Authorization", header)])
            XCTAssertEqual(answer.status, 401, header)
            uuids.insert(try XCTUnwrap(JSONValue.parse(answer.body)["uuid"]?.stringValue))
        }
        XCTAssertEqual(uuids.count, 3, "\(uuids)")
        XCTAssertTrue(uuids.allSatisfy { UUID(uuidString: $0) != nil }, "\(uuids)")
    }
}

/// The lines a logger wrote (its message and metadata), for the tests to read.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])

    var all: [String] { lines.withLock { $0 } }

    struct Handler: LogHandler {
        let lines: LogLines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let fields = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
            lines.lines.withLock { $0.append("\(event.message) \(fields)") }
        }
    }
}
