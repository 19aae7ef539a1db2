import Foundation
import RecordModel
import SyncEngine
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
    /// fails the test on a non-zero exit unless `allowFailure`. The bound is generous: a sync of a
    /// few thousand records in a debug build, beside the other test process on a loaded machine,
    /// has taken over a minute; a command that hangs still fails the test.
    @discardableResult
    func run(_ arguments: [String], allowFailure: Bool = false, environment: [String: String] = [:], timeout: TimeInterval = 180,
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

    /// Every record of the store (the Scorebook record types), read in this process: only while no
    /// `scorebook` runs on the store.
    func storedRecords() throws -> [String: Record] {
        let store = try LocalRecordStore(path: storePath)
        var records: [String: Record] = [:]
        for type in scorebookRecordTypes {
            for record in try store.records(ofType: type) { records[record.recordName] = record }
        }
        return records
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

    init(records: [String: JSONValue]) { self.records = records }

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
                // Not `records[name] = deleted ? nil : record`: JSONValue takes `nil` as JSON null,
                // which kept every deleted record as a null entry (and hid orphans pointing at it).
                if record["deleted"]?.boolValue == true {
                    records.removeValue(forKey: name)
                } else {
                    records[name] = record
                }
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

/// The Scorebook record types.
let scorebookRecordTypes = ["Person", "Game", "Match", "Player", "Score", "MatchImage", "MatchLocation"]

/// Asserts that a store holds exactly the server's records:
/// - what the CLI shows (`snapshot`, taken now if not given): the same people, games and matches
///   with every field equal to the server's (dates to the millisecond, references by name), each
///   match's players (their person) and each player's total equal to the sum of the server's
///   scores for it, and no shown record pointing at one the store does not show;
/// - the store itself, read after the CLI has exited: the same records of every type as the
///   server, each with the server's field values, and no record whose parent (a `DELETE_SELF`
///   or `VALIDATE` reference) is missing locally.
func assertStore(_ machine: CLIMachine, equals server: ServerZone, _ label: String, snapshot given: JSONValue? = nil,
                 file: StaticString = #filePath, line: UInt = #line) throws
{
    let snapshot = try given ?? machine.snapshot(file: file, line: line)
    assertSnapshot(snapshot, equals: server, label, file: file, line: line)
    try assertStoredRecords(of: machine, equal: server, label, file: file, line: line)
}

/// The CLI's view of a store against the server (see `assertStore`).
func assertSnapshot(_ snapshot: JSONValue, equals server: ServerZone, _ label: String,
                    file: StaticString = #filePath, line: UInt = #line)
{
    func entities(_ key: String) -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        for entity in snapshot[key]?.arrayValue ?? [] {
            guard let name = entity["recordName"]?.stringValue else { continue }
            XCTAssertNil(result[name], "\(label): \(name) listed twice", file: file, line: line)
            result[name] = entity
        }
        return result
    }
    let shown = ["Person": entities("people"), "Game": entities("games"), "Match": entities("matches")]
    for (type, local) in shown.sorted(by: { $0.key < $1.key }) {
        XCTAssertEqual(Set(local.keys), server.names(ofType: type), "\(label): \(type) records", file: file, line: line)
        for (name, entity) in local.sorted(by: { $0.key < $1.key }) {
            guard let record = server.records[name] else { continue }
            for difference in entityDifferences(entity, record) {
                XCTFail("\(label): \(name) \(difference)", file: file, line: line)
            }
        }
    }
    // Nothing shown points at something not shown.
    for (name, match) in shown["Match"] ?? [:] {
        let game = match["game"]?.stringValue ?? ""
        XCTAssertNotNil(shown["Game"]?[game], "\(label): local orphan \(name), its game \(game) is missing", file: file, line: line)
    }
    var players: Set<String> = []
    let totals = server.totalsByPlayer
    for (match, show) in (snapshot["shown"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
        XCTAssertNotNil(shown["Match"]?[match], "\(label): \(match) shown but not listed", file: file, line: line)
        for row in show["players"]?.arrayValue ?? [] {
            guard let player = row["recordName"]?.stringValue else { continue }
            players.insert(player)
            let person = row["person"]?.stringValue ?? ""
            XCTAssertNotNil(shown["Person"]?[person], "\(label): local orphan \(player), its person \(person) is missing",
                            file: file, line: line)
            let fields = server.records[player]?["fields"]
            XCTAssertEqual(fields?["match"]?["value"]?["recordName"]?.stringValue, match, "\(label): match of \(player)",
                           file: file, line: line)
            XCTAssertEqual(fields?["person"]?["value"]?["recordName"]?.stringValue, person, "\(label): person of \(player)",
                           file: file, line: line)
            XCTAssertEqual(row["total"]?.doubleValue ?? .nan, totals[player] ?? 0, accuracy: 1e-9, "\(label): total of \(player)",
                           file: file, line: line)
        }
    }
    XCTAssertEqual(players, server.names(ofType: "Player"), "\(label): players", file: file, line: line)
}

/// How an entity's JSON differs from the server's record of it: each field of
/// either side compared by its type, a missing field equal to null.
func entityDifferences(_ entity: JSONValue, _ record: JSONValue) -> [String] {
    let members = entity.objectValue ?? [:]
    let fields = record["fields"]?.objectValue ?? [:]
    var differences: [String] = []
    if members["recordType"] != record["recordType"] { differences.append("recordType \(String(describing: members["recordType"]))") }
    let names = Set(members.keys).union(fields.keys).subtracting(["recordName", "recordType"])
    for name in names.sorted() {
        let shown = members[name] ?? .null
        let field = fields[name]
        if !fieldMatches(shown, field) {
            differences.append("field \(name): the CLI shows \(shown.serializedString()), the server has "
                + (field?.serializedString() ?? "nothing"))
        }
    }
    return differences
}

/// Whether an entity's JSON value is a server field's value (`{"value", "type"}`, or nil).
func fieldMatches(_ shown: JSONValue, _ field: JSONValue?) -> Bool {
    guard let field, let value = field["value"], value != .null else { return shown == .null }
    switch field["type"]?.stringValue {
    case "STRING":
        return shown == value
    case "INT64":
        if let flag = shown.boolValue { return flag == ((value.int64Value ?? 0) != 0) }
        return shown.int64Value != nil && shown.int64Value == value.int64Value
    case "DOUBLE":
        guard let number = shown.doubleValue, let expected = value.doubleValue else { return false }
        return number == expected
    case "TIMESTAMP":
        guard let text = shown.stringValue, let date = isoDate(text), let milliseconds = value.doubleValue else { return false }
        return (date.timeIntervalSince1970 * 1000).rounded() == milliseconds.rounded()
    case "REFERENCE":
        return shown.stringValue != nil && shown.stringValue == value["recordName"]?.stringValue
    case "LOCATION":
        return shown["latitude"]?.doubleValue == value["latitude"]?.doubleValue
            && shown["longitude"]?.doubleValue == value["longitude"]?.doubleValue
    default:
        // ASSET and the like: the CLI does not show them.
        return shown == .null
    }
}

/// A CLI's JSON timestamp (`2026-05-01T12:00:00.000Z`). A formatter per call: formatters are not
/// `Sendable`, so one cannot be shared between tests.
func isoDate(_ text: String) -> Date? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)
}

/// The store's own records against the server's, field by field, and no local orphan. Opens the
/// store in this process: only while no `scorebook` runs on it.
func assertStoredRecords(of machine: CLIMachine, equal server: ServerZone, _ label: String,
                         file: StaticString = #filePath, line: UInt = #line) throws
{
    for problem in try storeDifferences(try machine.storedRecords(), server) {
        XCTFail("\(label): \(problem)", file: file, line: line)
    }
}

/// What differs between a store's records and the server's: records on one side only, field
/// values, and local orphans (a `DELETE_SELF` or `VALIDATE` reference to a record not in the store).
func storeDifferences(_ local: [String: Record], _ server: ServerZone) throws -> [String] {
    var problems: [String] = []
    let onlyLocal = Set(local.keys).subtracting(server.records.keys).sorted()
    let onlyOnServer = Set(server.records.keys).subtracting(local.keys).sorted()
    if !onlyLocal.isEmpty { problems.append("the store holds \(onlyLocal), which the server lacks") }
    if !onlyOnServer.isEmpty { problems.append("the store lacks \(onlyOnServer), which the server holds") }
    for (name, record) in local.sorted(by: { $0.key < $1.key }) {
        for (field, reference) in record.references where reference.action != .none && local[reference.recordName] == nil {
            problems.append("local orphan \(name): its \(field) \(reference.recordName) is not in the store")
        }
        guard let json = server.records[name] else { continue }
        let onServer = try Record(responseJSON: json)
        if record.recordType != onServer.recordType { problems.append("\(name) is a \(record.recordType) in the store") }
        for field in Set(record.fields.keys).union(onServer.fields.keys).sorted() where record.fields[field] != onServer.fields[field] {
            problems.append("\(name).\(field) is \(String(describing: record.fields[field])) in the store, "
                + "\(String(describing: onServer.fields[field])) on the server")
        }
    }
    return problems
}
