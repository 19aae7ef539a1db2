import Foundation
import RecordModel
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The answer of one `scorebook` run.
struct CLIResult {
    var status: Int32
    var stdout: String
    var stderr: String

    var lines: [String] { stdout.split(separator: "\n").map(String.init) }
}

/// One machine of the end-to-end tests: a store of its own, used only through the real
/// `scorebook` binary, as a person would.
final class CLIMachine {
    let name: String
    let directory: URL
    var storePath: String { directory.appendingPathComponent("scorebook.sqlite").path }

    init(_ name: String) {
        self.name = name
        directory = DaemonProcess.makeTemporaryDirectory(prefix: "scorebook-\(name)")
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// Runs `scorebook --store STORE ARGUMENTS…` (with `environment` added to the test's own);
    /// fails the test on a non-zero exit unless `allowFailure`.
    @discardableResult
    func run(_ arguments: [String], allowFailure: Bool = false, environment: [String: String] = [:], timeout: TimeInterval = 60,
             file: StaticString = #filePath, line: UInt = #line) throws -> CLIResult
    {
        let answer: CLIResult
        if environment.isEmpty {
            let result = try DaemonProcess.run("scorebook", ["--store", storePath] + arguments, timeout: timeout)
            answer = CLIResult(status: result.status, stdout: result.stdout, stderr: result.stderr)
        } else {
            let background = try BackgroundCLI(["--store", storePath] + arguments, environment: environment)
            guard background.wait(timeout: timeout) else {
                throw DaemonError("scorebook \(arguments.joined(separator: " ")) did not finish within \(Int(timeout)) s")
            }
            answer = CLIResult(status: background.process.terminationStatus, stdout: background.stdout.text, stderr: background.stderr.text)
        }
        if !allowFailure && answer.status != 0 {
            XCTFail("[\(name)] scorebook \(arguments.joined(separator: " ")) exited \(answer.status): \(answer.stderr)", file: file, line: line)
        }
        return answer
    }

    @discardableResult
    func run(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) throws -> CLIResult {
        try run(arguments, file: file, line: line)
    }

    /// Runs a command with `--json` and parses its output.
    func json(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let result = try run(arguments + ["--json"], file: file, line: line)
        return try JSONValue.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The record name a creating command printed.
    func create(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) throws -> String {
        try run(arguments, file: file, line: line).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func login(_ daemon: DaemonProcess, token: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try run(["account", "login", "--server", daemon.baseURL.absoluteString, "--token", token], file: file, line: line)
    }

    /// `sync --json`: the summary's counts.
    @discardableResult
    func sync(file: StaticString = #filePath, line: UInt = #line) throws -> (sent: Int, received: Int, conflicts: Int) {
        let summary = try json("sync", file: file, line: line)
        let sent = (summary["sent"]?["saved"]?.int64Value ?? 0) + (summary["sent"]?["deleted"]?.int64Value ?? 0)
        let received = (summary["received"]?["saved"]?.int64Value ?? 0) + (summary["received"]?["deleted"]?.int64Value ?? 0)
        return (Int(sent), Int(received), Int(summary["conflicts"]?.int64Value ?? 0))
    }

    /// Everything a user can see in this store: people, games, matches, and each match shown.
    func snapshot(file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let matches = try json("match", "list", file: file, line: line)
        var shown: [String: JSONValue] = [:]
        for match in matches.arrayValue ?? [] {
            guard let name = match["recordName"]?.stringValue else { continue }
            shown[name] = try json("match", "show", name, file: file, line: line)
        }
        return ["people": try json("person", "list", file: file, line: line), "games": try json("game", "list", file: file, line: line),
                "matches": matches, "shown": .object(shown)]
    }

    /// Starts `scorebook sync --watch --for SECONDS --json` in the background.
    func startWatch(seconds: Int) throws -> BackgroundCLI {
        try BackgroundCLI(["--store", storePath, "sync", "--watch", "--for", String(seconds), "--json"])
    }

    /// Starts `scorebook sync` in the background, to be killed.
    func startSync() throws -> BackgroundCLI {
        try BackgroundCLI(["--store", storePath, "sync"])
    }
}

/// A `scorebook` process running in the background.
final class BackgroundCLI {
    let process: Process
    let stdout: PipeCollector
    let stderr: PipeCollector

    init(_ arguments: [String]) throws {
        (process, stdout, stderr) = try DaemonProcess.spawn("scorebook", arguments)
    }

    /// Starts `scorebook ARGUMENTS…` with `environment` added to the test's own.
    init(_ arguments: [String], environment: [String: String]) throws {
        process = Process()
        process.executableURL = DaemonProcess.binaryURL("scorebook")
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, added in added }
        let outPipe = Pipe(), errPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        stdout = PipeCollector(outPipe.fileHandleForReading)
        stderr = PipeCollector(errPipe.fileHandleForReading)
    }

    deinit { kill() }

    /// Waits for the process to end by itself; false if it is still running at the timeout.
    func wait(timeout: TimeInterval) -> Bool {
        guard DaemonProcess.waitForExit(process, timeout: timeout) else { return false }
        _ = stdout.waitForEOF(timeout: 5)
        _ = stderr.waitForEOF(timeout: 5)
        return true
    }

    /// SIGKILL: no chance to clean up.
    func kill() {
        guard process.isRunning else { return }
        sendSignal(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    var lines: [String] { stdout.text.split(separator: "\n").map(String.init) }
}

/// The server's view of one user's Scorebook zone, read from `changes/zone` from the beginning.
struct ServerZone {
    var records: [String: JSONValue] = [:]

    init(daemon: DaemonProcess, token: String, container: String = "iCloud.scorebook", environment: String = "production") throws {
        var syncToken: String?
        for _ in 0..<1_000 {
            var zone: [String: JSONValue] = ["zoneID": ["zoneName": "ScorebookData"]]
            if let syncToken { zone["syncToken"] = .string(syncToken) }
            let body = JSONValue.object(["zones": [.object(zone)]]).serializedString()
            let answer = try daemon.post("/database/1/\(container)/\(environment)/private/changes/zone", token: token, json: body)
            guard answer.status == 200, let entry = answer.body["zones"]?.arrayValue?.first else {
                throw DaemonError("changes/zone answered \(answer.status): \(answer.body.serializedString())")
            }
            if entry["serverErrorCode"]?.stringValue == "ZONE_NOT_FOUND" { return }
            for record in entry["records"]?.arrayValue ?? [] {
                guard let name = record["recordName"]?.stringValue else { continue }
                records[name] = record["deleted"]?.boolValue == true ? nil : record
            }
            syncToken = entry["syncToken"]?.stringValue
            if entry["moreComing"]?.boolValue != true { return }
        }
        throw DaemonError("changes/zone never finished")
    }

    func names(ofType type: String) -> Set<String> {
        Set(records.values.filter { $0["recordType"]?.stringValue == type }.compactMap { $0["recordName"]?.stringValue })
    }

    /// Records whose DELETE_SELF or VALIDATE reference points at a record the zone lacks.
    var orphans: [String] {
        records.compactMap { name, record in
            let fields = record["fields"]?.objectValue ?? [:]
            let dangling = fields.values.contains { field in
                guard field["type"]?.stringValue == "REFERENCE", let target = field["value"]?["recordName"]?.stringValue else { return false }
                return field["value"]?["action"]?.stringValue != "NONE" && records[target] == nil
            }
            return dangling ? name : nil
        }.sorted()
    }

    /// Each Player's total: the sum of its Score records.
    var totalsByPlayer: [String: Double] {
        var totals: [String: Double] = [:]
        for record in records.values where record["recordType"]?.stringValue == "Score" {
            guard let player = record["fields"]?["player"]?["value"]?["recordName"]?.stringValue else { continue }
            totals[player, default: 0] += record["fields"]?["value"]?["value"]?.doubleValue ?? 0
        }
        return totals
    }
}

/// Asserts that a store shows exactly the server's records: the same people, games, matches and
/// players, and each player's total equal to the sum of the server's scores for it.
func assertStore(_ snapshot: JSONValue, equals server: ServerZone, _ label: String, file: StaticString = #filePath, line: UInt = #line) {
    func names(_ key: String) -> Set<String> {
        Set((snapshot[key]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue })
    }
    XCTAssertEqual(names("people"), server.names(ofType: "Person"), "\(label): people", file: file, line: line)
    XCTAssertEqual(names("games"), server.names(ofType: "Game"), "\(label): games", file: file, line: line)
    XCTAssertEqual(names("matches"), server.names(ofType: "Match"), "\(label): matches", file: file, line: line)
    var players: Set<String> = []
    let totals = server.totalsByPlayer
    for show in (snapshot["shown"]?.objectValue ?? [:]).values {
        for row in show["players"]?.arrayValue ?? [] {
            guard let player = row["recordName"]?.stringValue else { continue }
            players.insert(player)
            XCTAssertEqual(row["total"]?.doubleValue ?? .nan, totals[player] ?? 0, accuracy: 1e-9, "\(label): total of \(player)",
                           file: file, line: line)
        }
    }
    XCTAssertEqual(players, server.names(ofType: "Player"), "\(label): players", file: file, line: line)
}
