import Foundation
import RecordSync

/// A note of the library scenario: the example app's shape (a folder reference, a text, a flag),
/// declared here because the bench cannot depend on the example's package.
struct BenchNote: SyncedEntity {
    static let recordType = "Note"
    static let fieldNames = ["folder", "text", "pinned", "modificationDate"]

    let recordName: String
    var modificationDate: Date
    var folder: String
    var text: String
    var pinned: Bool

    func record(in zone: ZoneID) -> Record {
        record(in: zone, fields: ["folder": .deleteSelfReference(to: folder), "text": .string(text), "pinned": .int64(pinned ? 1 : 0)])
    }

    init(record: Record) throws {
        let reader = try RecordReader(record, as: BenchNote.self)
        recordName = record.recordName
        folder = try reader.reference("folder")
        text = reader.string("text") ?? ""
        pinned = (reader.int("pinned") ?? 0) != 0
        modificationDate = reader.modificationDate
    }
}

/// A note record as the example app writes it, about the size of `personRecord`.
func noteRecord(_ index: Int, folder: String) -> JSONValue {
    [
        "recordName": .string("Note|~|" + String(format: "%08X-6C2E-4BAD-9BDD-%012X", index, index)),
        "recordType": "Note",
        "fields": [
            "folder": ["value": ["recordName": .string(folder), "action": "DELETE_SELF"], "type": "REFERENCE"],
            "text": ["value": .string("Note \(index) of the benchmark: buy milk, call Bob, ship it")],
            "pinned": ["value": .int(Int64(index % 2))],
            "modificationDate": ["value": .int(1_763_800_000_000 + Int64(index)), "type": "TIMESTAMP"],
        ],
    ]
}

/// A new machine's first sync of `records` records through the library (`SyncStore.sync()` of a
/// folder and its notes into an empty store, in this process) against the CLI's first
/// `scorebook sync` of as many Person records, in the same run, each from a fresh `scorebookd`:
/// the library should sync as fast as the CLI built on it (within 10%).
func libraryFirstSync(_ options: BenchOptions) async throws -> [String: JSONValue] {
    let scorebook = try siblingBinary("scorebook")
    let directory = temporaryDirectory("library-first-sync")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    // A daemon each, one after the other (an account's sync covers every zone it has), in one
    // container and environment, `development` (which learns the app's record types on first
    // save; `production` would need them in the daemon's schema).
    func startDaemon(_ name: String) throws -> DaemonUnderTest {
        try DaemonUnderTest(directory: directory + "/" + name, container: "iCloud.bench", environment: "development",
                            extraArguments: ["--rate-limit", "1000000"])
    }

    // The CLI's first sync of a book of Person records.
    let cliDaemon = try startDaemon("cli-daemon")
    let cliStore = directory + "/cli/scorebook.sqlite"
    var connection = try RawHTTPConnection(port: cliDaemon.port)
    try createZone("ScorebookData", on: cliDaemon, connection)
    var index = 0
    while index < options.records {
        let people = (index..<min(index + batchSize, options.records)).map(personRecord)
        try post(modifyBody(zone: "ScorebookData", records: people), to: "/records/modify", on: cliDaemon, connection)
        index += people.count
    }
    _ = try Subprocess.run(scorebook, ["--store", cliStore, "account", "login", "--server", cliDaemon.baseURL, "--token", cliDaemon.token,
                                       "--container", cliDaemon.container, "--environment", cliDaemon.environment])
    let cli = try peakResidentSize(scorebook, ["--store", cliStore, "--json", "sync"])
    _ = try? cliDaemon.stop()
    let cliSummary = try JSONValue.parse(cli.output.trimmingCharacters(in: .whitespacesAndNewlines))
    guard cliSummary["received"]?["saved"]?.int64Value == Int64(options.records) else {
        throw Subprocess.Failure(description: "the CLI's first sync did not receive every record: \(cli.output)")
    }

    // The library's first sync of a folder and its notes.
    let daemon = try startDaemon("app-daemon")
    defer { _ = try? daemon.stop() }
    connection = try RawHTTPConnection(port: daemon.port)
    try createZone("Notes", on: daemon, connection)
    let folder = "Folder|~|00000000-6C2E-4BAD-9BDD-000000000000"
    let folderRecord: JSONValue = ["recordName": .string(folder), "recordType": "Folder", "fields": ["name": ["value": "Inbox"]]]
    try post(modifyBody(zone: "Notes", records: [folderRecord]), to: "/records/modify", on: daemon, connection)
    index = 0
    while index < options.records - 1 {
        let notes = (index..<min(index + batchSize, options.records - 1)).map { noteRecord($0, folder: folder) }
        try post(modifyBody(zone: "Notes", records: notes), to: "/records/modify", on: daemon, connection)
        index += notes.count
    }

    let store = try SyncStore(path: directory + "/app/notes.sqlite", zone: "Notes", entityTypes: [BenchNote.self],
                              transport: SocketTransport())
    guard let server = URL(string: daemon.baseURL) else { throw Subprocess.Failure(description: "bad daemon URL \(daemon.baseURL)") }
    try await store.logIn(server: server, token: daemon.token, container: daemon.container, environment: daemon.environment)
    let started = now()
    let summary = try await store.sync()
    let librarySeconds = now() - started
    guard summary.receivedSaved == options.records else {
        throw Subprocess.Failure(description: "the library's first sync received \(summary.receivedSaved) of \(options.records) records")
    }

    return [
        "records": .int(Int64(options.records)),
        "librarySeconds": .double(librarySeconds),
        "libraryRecordsPerSecond": .double(Double(options.records) / librarySeconds),
        "cliSeconds": .double(cli.seconds),
        "cliRecordsPerSecond": .double(Double(options.records) / cli.seconds),
        // Above 0.9 meets the target: the library within 10% of the CLI.
        "libraryVersusCLI": .double(cli.seconds / librarySeconds),
    ]
}
