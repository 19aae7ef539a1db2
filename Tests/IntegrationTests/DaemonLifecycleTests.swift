import Foundation
import RecordModel
import Synchronization
import XCTest

/// The daemon as a process: readiness line, health, graceful shutdown, durability
/// across restarts and kills, and how it fails on bad flags, data directories and ports.
final class DaemonLifecycleTests: XCTestCase {
    func testTheReadinessLineIsExactlyTheContractsAndHealthNeedsNoCredentials() throws {
        let daemon = try DaemonProcess.start()
        XCTAssertEqual(daemon.readinessLine, "scorebookd listening on http://127.0.0.1:\(daemon.port)")
        XCTAssertNotEqual(daemon.port, 0, "--port 0 binds a real free port")

        let health = try daemon.get("/health", token: nil)
        XCTAssertEqual(health.status, 200)
        XCTAssertEqual(health.body, ["status": "ok"])
        let raw = try daemon.request("GET", "/health")
        XCTAssertTrue(raw.headers["content-type"]?.hasPrefix("application/json") ?? false, "\(raw.headers)")

        try daemon.stop()
        XCTAssertEqual(daemon.standardOutputText, daemon.readinessLine + "\n", "standard output carries only the readiness line")
    }

    func testSIGTERMAndSIGINTShutDownWithExitZero() throws {
        let daemon = try DaemonProcess.start()
        _ = try daemon.createUser("ann")
        XCTAssertNoThrow(try daemon.stop(signal: SIGTERM))
        XCTAssertFalse(daemon.isRunning)

        try daemon.restart()
        XCTAssertEqual(try daemon.get("/health", token: nil).status, 200)
        XCTAssertNoThrow(try daemon.stop(signal: SIGINT))
    }

    func testARestartKeepsEveryAcknowledgedWriteAndEverySyncToken() throws {
        let daemon = try DaemonProcess.start()
        let token = try daemon.createUser("ann")
        let client = APIClient(daemon: daemon, token: token)
        try client.ok("zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "ScorebookData"]]]]])
        var tags: [String: String] = [:]
        for index in 0..<20 {
            let answer = try client.ok("records/modify", [
                "zoneID": ["zoneName": "ScorebookData"],
                "operations": [["operationType": "create", "record": [
                    "recordName": .string("Game|~|\(index)"), "recordType": "Game",
                    "fields": ["name": ["value": .string("Game \(index)"), "type": "STRING"]],
                ]]],
            ])
            tags["Game|~|\(index)"] = answer["records"]?.arrayValue?.first?["recordChangeTag"]?.stringValue
        }
        try client.ok("records/modify", ["zoneID": ["zoneName": "ScorebookData"],
                                         "operations": [["operationType": "forceDelete", "record": ["recordName": "Game|~|0"]]]])
        let zoneToken = try XCTUnwrap(try client.ok("records/changes", ["zoneID": ["zoneName": "ScorebookData"]])["syncToken"]?.stringValue)
        let databaseToken = try XCTUnwrap(try client.ok("changes/database", [:])["syncToken"]?.stringValue)
        let apiToken = try daemon.createAPIToken()
        let oldPort = daemon.port

        try daemon.restart()  // SIGTERM, exit 0, start again on the same data directory

        XCTAssertEqual(try daemon.get("/health", token: nil).status, 200)
        let restarted = APIClient(daemon: daemon, token: token)
        let lookup = try restarted.ok("records/lookup", [
            "zoneID": ["zoneName": "ScorebookData"], "records": .array((0..<20).map { ["recordName": .string("Game|~|\($0)")] }),
        ])
        let entries = lookup["records"]?.arrayValue ?? []
        XCTAssertEqual(entries.count, 20)
        XCTAssertEqual(entries.first?["serverErrorCode"], "NOT_FOUND", "the acknowledged delete survived")
        for entry in entries.dropFirst() {
            let name = entry["recordName"]?.stringValue ?? "?"
            XCTAssertEqual(entry["recordChangeTag"]?.stringValue, tags[name], "\(name) survived unchanged")
        }
        let since = try restarted.ok("records/changes", ["zoneID": ["zoneName": "ScorebookData"], "syncToken": .string(zoneToken)])
        XCTAssertEqual(since["records"]?.arrayValue?.count, 0, "the zone token is still valid and up to date (port \(oldPort) → \(daemon.port))")
        XCTAssertEqual(try restarted.ok("changes/database", ["syncToken": .string(databaseToken)])["zones"]?.arrayValue?.count, 0)
        let cloudKitStyle = try daemon.request("GET", "/database/1/iCloud.scorebook/development/private/users/current"
                                                   + "?ckAPIToken=\(apiToken)&ckWebAuthToken=\(token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")").parsed()
        XCTAssertEqual(cloudKitStyle.status, 200, "the ckAPIToken made before the restart still authenticates")

        try restarted.ok("records/modify", ["zoneID": ["zoneName": "ScorebookData"],
                                            "operations": [["operationType": "forceDelete", "record": ["recordName": "Game|~|1"]]]])
        let after = try restarted.ok("records/changes", ["zoneID": ["zoneName": "ScorebookData"], "syncToken": .string(zoneToken)])
        XCTAssertEqual(after["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue }, ["Game|~|1"])
        XCTAssertEqual(after["records"]?.arrayValue?.first?["deleted"], true)
        try daemon.stop()
    }

    func testAKillNineLosesNoAcknowledgedWrite() throws {
        let daemon = try DaemonProcess.start()
        let client = APIClient(daemon: daemon, token: try daemon.createUser("ann"))
        for index in 0..<30 {
            try client.ok("records/modify", ["operations": [["operationType": "create", "record": [
                "recordName": .string("r\(index)"), "recordType": "Thing", "fields": ["i": ["value": .int(Int64(index))]],
            ]]]])
        }
        daemon.kill()
        try daemon.restart()
        let lookup = try client.ok("records/lookup", ["records": .array((0..<30).map { ["recordName": .string("r\($0)")] })])
        let found = lookup["records"]?.arrayValue?.filter { $0["serverErrorCode"] == nil }.count
        XCTAssertEqual(found, 30, "every write answered 200 before SIGKILL is there after it")
        try daemon.stop()
    }

    func testWritesAcknowledgedWhileSIGTERMArrivesAreKept() throws {
        try assertAcknowledgedWritesSurvive { try $0.stop() }  // SIGTERM mid-stream: exit 0
    }

    func testWritesAcknowledgedBeforeASIGKILLMidStreamAreKept() throws {
        try assertAcknowledgedWritesSurvive { $0.kill() }
    }

    /// A writer creates records one request at a time; once it has 20 answers, `interrupt` ends the
    /// daemon under it. After a restart every record that was answered 200 must be stored.
    func assertAcknowledgedWritesSurvive(interrupt: (DaemonProcess) throws -> Void, file: StaticString = #filePath,
                                         line: UInt = #line) throws
    {
        let daemon = try DaemonProcess.start()
        let client = APIClient(daemon: daemon, token: try daemon.createUser("ann"))
        let acknowledged = AcknowledgedNames()
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { finished.signal() }
            for index in 0..<5_000 {
                let name = "w\(index)"
                let body: JSONValue = ["operations": [["operationType": "create", "record": ["recordName": .string(name), "recordType": "Thing"]]]]
                guard let answer = try? client.call("records/modify", body), answer.status == 200,
                      answer.body["records"]?.arrayValue?.first?["recordChangeTag"] != nil
                else { return }  // the daemon has gone
                acknowledged.add(name)
            }
        }
        let deadline = Date().addingTimeInterval(20)
        while acknowledged.count < 20 && Date() < deadline { usleep(5_000) }
        XCTAssertGreaterThanOrEqual(acknowledged.count, 20, "the writer got going", file: file, line: line)
        try interrupt(daemon)
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success, "the writer saw the daemon go", file: file, line: line)

        try daemon.restart()
        let names = acknowledged.names
        for chunk in stride(from: 0, to: names.count, by: 400) {
            let slice = names[chunk..<min(chunk + 400, names.count)]
            let lookup = try client.ok("records/lookup", ["records": .array(slice.map { ["recordName": .string($0)] })])
            let missing = lookup["records"]?.arrayValue?.filter { $0["serverErrorCode"] != nil }.compactMap { $0["recordName"]?.stringValue }
            XCTAssertEqual(missing, [], "every write answered 200 before the daemon went is stored", file: file, line: line)
        }
        try daemon.stop()
    }

    func testUserAndAPITokenCommandsWorkWhileTheDaemonServesTheSameDirectory() throws {
        let daemon = try DaemonProcess.start()
        let (recordName, token) = try daemon.createUserInfo("ann")
        XCTAssertTrue(recordName.hasPrefix("_"), recordName)
        XCTAssertEqual(try APIClient(daemon: daemon, token: token).ok("users/current", [:])["userRecordName"]?.stringValue, recordName,
                       "a token made by another process is accepted at once")

        let second = try DaemonProcess.run("scorebookd", ["user", "token", "ann", "--data-dir", daemon.dataDirectory.path])
        XCTAssertEqual(second.status, 0, second.stderr)
        let secondJSON = try JSONValue.parse(second.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(secondJSON["userRecordName"]?.stringValue, recordName)
        XCTAssertEqual(secondJSON["name"], "ann")
        let secondToken = try XCTUnwrap(secondJSON["token"]?.stringValue)
        XCTAssertNotEqual(secondToken, token)
        XCTAssertEqual(try APIClient(daemon: daemon, token: secondToken).call("users/current", [:]).status, 200)
        XCTAssertEqual(try APIClient(daemon: daemon, token: token).call("users/current", [:]).status, 200, "the first token still works")

        let list = try DaemonProcess.run("scorebookd", ["user", "list", "--json", "--data-dir", daemon.dataDirectory.path])
        XCTAssertEqual(list.status, 0)
        let users = try JSONValue.parse(list.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).arrayValue ?? []
        XCTAssertEqual(users.map { $0["userRecordName"] }, [.string(recordName)])
        XCTAssertFalse(list.stdout.contains(token) || list.stdout.contains(secondToken), "no token is ever listed")

        let apiToken = try daemon.createAPIToken()
        XCTAssertNotNil(apiToken.range(of: "^[0-9a-f]{64}$", options: .regularExpression), apiToken)

        let duplicate = try DaemonProcess.run("scorebookd", ["user", "create", "ann", "--data-dir", daemon.dataDirectory.path])
        XCTAssertNotEqual(duplicate.status, 0)
        assertOneLine(duplicate.stderr, "user create of an existing name")
        let unknown = try DaemonProcess.run("scorebookd", ["user", "token", "nobody", "--data-dir", daemon.dataDirectory.path])
        XCTAssertNotEqual(unknown.status, 0)
        assertOneLine(unknown.stderr, "user token of an unknown name")
        try daemon.stop()
    }

    func testASchemaFileReplacesTheBuiltInProductionSchema() throws {
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "scorebookd-schema")
        defer { try? FileManager.default.removeItem(at: directory) }
        let schemaFile = directory.appendingPathComponent("widgets.ckdb")
        try Data("DEFINE SCHEMA\n    RECORD TYPE Widget (\n        size INT64 QUERYABLE,\n        label STRING\n    );\n".utf8).write(to: schemaFile)
        let daemon = try DaemonProcess.start(extraArguments: ["--schema", schemaFile.path])
        var client = APIClient(daemon: daemon, token: try daemon.createUser("ann"))
        client.environment = "production"

        let widget = try client.ok("records/modify", ["operations": [["operationType": "create", "record": [
            "recordName": "w1", "recordType": "Widget", "fields": ["size": ["value": 3], "label": ["value": "small"]],
        ]]]])
        XCTAssertEqual(widget["records"]?.arrayValue?.first?["fields"]?["size"], ["value": 3, "type": "INT64"], "types come from the file")
        let game = try client.ok("records/modify", ["operations": [["operationType": "create", "record": [
            "recordName": "Game|~|1", "recordType": "Game", "fields": ["name": ["value": "Catan"]],
        ]]]])
        let error = game["records"]?.arrayValue?.first
        XCTAssertEqual(error?["serverErrorCode"], "BAD_REQUEST", "Game is not in this schema")
        XCTAssertTrue(error?["reason"]?.stringValue?.contains("Game") ?? false, "\(String(describing: error))")
        try daemon.stop()

        try Data("RECORD TYPE Broken (size NOTATYPE".utf8).write(to: schemaFile)
        let broken = try DaemonProcess.run("scorebookd", ["serve", "--data-dir", directory.path, "--port", "0", "--schema", schemaFile.path])
        XCTAssertNotEqual(broken.status, 0)
        assertOneLine(broken.stderr, "an invalid schema file")
    }

    func testBadFlagsFailWithOneLineOnStandardError() throws {
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "scorebookd-flags")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cases: [[String]] = [
            ["serve", "--data-dir", directory.path, "--port", "abc"],
            ["serve", "--data-dir", directory.path, "--port", "70000"],
            ["serve", "--data-dir", directory.path, "--port", "-1"],
            ["serve", "--data-dir", directory.path, "--bogus"],
            ["serve", "--data-dir", directory.path, "--database", "postgres://u@127.0.0.1/db", "--port", "0"],
            ["serve", "--data-dir", "", "--port", "0"],
            ["serve", "--data-dir", directory.path, "--port", "0", "--tombstone-retention", "0"],
            ["serve", "--data-dir", directory.path, "--port", "0", "--log-level", "loud"],
            ["serve", "--data-dir", directory.path, "--port", "0", "--schema", directory.appendingPathComponent("missing.ckdb").path],
            ["explode"],
            ["user", "create", "--data-dir", directory.path],
        ]
        for arguments in cases {
            let result = try DaemonProcess.run("scorebookd", arguments, timeout: 20)
            let command = arguments.joined(separator: " ")
            XCTAssertNotEqual(result.status, 0, command)
            assertOneLine(result.stderr, command)
            XCTAssertFalse(result.stdout.contains("listening"), "\(command) never reports readiness")
            if arguments.contains("loud") {
                XCTAssertTrue(result.stderr.contains("'loud' is invalid for '--log-level <log-level>'") && result.stderr.contains("trace, debug, info"),
                              "a refused level names the levels: \(result.stderr)")
            }
        }
    }

    func testAnUnwritableDataDirectoryFailsWithOneLine() throws {
        for path in ["/proc/x", "/proc/version"] {
            let result = try DaemonProcess.run("scorebookd", ["serve", "--data-dir", path, "--port", "0"], timeout: 20)
            XCTAssertNotEqual(result.status, 0, path)
            assertOneLine(result.stderr, path)
            XCTAssertTrue(result.stderr.contains(path), "the line names the directory: \(result.stderr)")
        }
        let user = try DaemonProcess.run("scorebookd", ["user", "create", "ann", "--data-dir", "/proc/x"], timeout: 20)
        XCTAssertNotEqual(user.status, 0)
        assertOneLine(user.stderr, "user create in /proc/x")
    }

    func testABusyPortFailsWithOneLine() throws {
        let first = try DaemonProcess.start()
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "scorebookd-busy")
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try DaemonProcess.run("scorebookd", ["serve", "--data-dir", directory.path, "--port", String(first.port)], timeout: 20)
        XCTAssertNotEqual(result.status, 0)
        assertOneLine(result.stderr, "busy port")
        XCTAssertTrue(result.stderr.lowercased().contains("in use"), result.stderr)
        XCTAssertEqual(try first.get("/health", token: nil).status, 200, "the first daemon is unaffected")
        try first.stop()
    }

}

/// A tiny client of one daemon as one user.
struct APIClient {
    let daemon: DaemonProcess
    let token: String
    var container = DaemonTestCase.container
    var environment = "development"

    init(daemon: DaemonProcess, token: String) {
        self.daemon = daemon
        self.token = token
    }

    func call(_ operation: String, _ body: JSONValue) throws -> (status: Int, body: JSONValue) {
        try daemon.post("/database/1/\(container)/\(environment)/private/\(operation)", token: token, json: body.serializedString())
    }

    @discardableResult
    func ok(_ operation: String, _ body: JSONValue, file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let answer = try call(operation, body)
        XCTAssertEqual(answer.status, 200, "\(operation): \(answer.body.serializedString().prefix(400))", file: file, line: line)
        return answer.body
    }
}

/// Record names a background writer got a 200 for.
final class AcknowledgedNames: Sendable {
    private let list = Mutex<[String]>([])

    func add(_ name: String) { list.withLock { $0.append(name) } }

    var names: [String] { list.withLock { $0 } }

    var count: Int { names.count }
}
