import Foundation
import RecordModel
import SQLiteDB

/// (8c) A new machine's first `scorebook sync` of a book of `records` Person records, end to
/// end: a real release `scorebookd` and the real `scorebook` as child processes. Records per
/// second over the CLI's wall clock, its peak RSS, where its time went (the CLI's own timings of
/// fetching, parsing and applying pages), and the apply phase against a raw baseline in the same
/// run: the very rows the sync wrote (local records and server copies), inserted into an empty
/// store of the CLI's schema with one prepared statement per table, 400 records to a transaction,
/// at the durability the CLI commits fetched pages with.
func firstSync(_ options: BenchOptions) async throws -> [String: JSONValue] {
    let scorebook = try siblingBinary("scorebook")
    let directory = temporaryDirectory("first-sync")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let daemon = try DaemonUnderTest(directory: directory + "/daemon", container: "iCloud.scorebook", environment: "production",
                                     extraArguments: ["--rate-limit", "1000000"])
    defer { _ = try? daemon.stop() }
    let store = directory + "/cli/scorebook.sqlite"
    try seedPeopleBook(records: options.records, on: daemon, loggingIn: store, with: scorebook)

    // The CLI appends its timings line to this file (the child inherits the variable).
    let timingsFile = directory + "/timings.json"
    setenv("SCOREBOOK_SYNC_TIMINGS", timingsFile, 1)
    defer { unsetenv("SCOREBOOK_SYNC_TIMINGS") }
    let daemonCPUStarted = processCPUSeconds(pid: daemon.process.pid)
    let sync = try peakResidentSize(scorebook, ["--store", store, "--json", "sync"])
    let daemonCPU = processCPUSeconds(pid: daemon.process.pid) - daemonCPUStarted
    let summary = try JSONValue.parse(sync.output.trimmingCharacters(in: .whitespacesAndNewlines))
    guard summary["received"]?["saved"]?.int64Value == Int64(options.records) else {
        throw Subprocess.Failure(description: "the first sync did not receive every record: \(sync.output)")
    }
    let timings = try JSONValue.parse(Array(try Data(contentsOf: URL(fileURLWithPath: timingsFile))))
    let applySeconds = timings["applySeconds"]?.doubleValue ?? 0
    let rawSeconds = try rawInsertSeconds(copyingRowsOf: store, into: directory + "/raw")

    return [
        "records": .int(Int64(options.records)),
        "seconds": .double(sync.seconds),
        "recordsPerSecond": .double(Double(options.records) / sync.seconds),
        "peakMegabytes": .double(Double(sync.bytes) / 1_048_576),
        "pages": timings["pages"] ?? .null,
        "fetchSeconds": timings["fetchSeconds"] ?? .null,
        "decodeSeconds": timings["decodeSeconds"] ?? .null,
        "applySeconds": .double(applySeconds),
        "rawInsertSeconds": .double(rawSeconds),
        "applyVersusRaw": .double(rawSeconds / applySeconds),
        "storeMegabytes": .double(Double(directorySize(directory + "/cli")) / 1_048_576),
        // What serving the first sync cost the daemon, a record (its feed pages and the sign-in).
        "daemonCPUMicrosecondsPerRecord": .double(microsecondsPer(daemonCPU, options.records)),
    ]
}

/// Inserts every `records` and `server_copies` row of the store at `source` into an empty store
/// of the same schema under `directory`, 400 records (and their server copies) to a transaction;
/// returns the seconds the inserts took.
func rawInsertSeconds(copyingRowsOf source: String, into directory: String) throws -> Double {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let from = try SQLiteConnection(path: source)
    let rows = try from.map("""
        SELECT r.book, r.name, r.type, r.fields, r.parent, r.modified_ms, s.change_tag, s.record
        FROM records r JOIN server_copies s ON s.book = r.book AND s.name = r.name ORDER BY r.rowid
        """) { row in
        [SQLValue.int(row.int64(0)), .text(row.text(1)), .text(row.text(2)), .blob(row.blob(3)), row.optionalText(4).map(SQLValue.text) ?? .null,
         .int(row.int64(5)), row.optionalText(6).map(SQLValue.text) ?? .null, .blob(row.blob(7))]
    }
    let schema = try from.map("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'") { $0.text(0) }
    let to = try SQLiteConnection(path: directory + "/raw.sqlite", synchronous: .normal)
    for statement in schema { try to.execute(statement) }
    let insertRecord = try to.statement("INSERT INTO records(book, name, type, fields, parent, modified_ms) VALUES(?, ?, ?, ?, ?, ?)")
    let insertCopy = try to.statement("INSERT INTO server_copies(book, name, type, change_tag, record, seen) VALUES(?, ?, ?, ?, ?, 1)")
    let started = now()
    var index = 0
    while index < rows.count {
        try to.transaction {
            for row in rows[index..<min(index + batchSize, rows.count)] {
                try insertRecord.bind(Array(row[0..<6]))
                _ = try insertRecord.step()
                try insertCopy.bind([row[0], row[1], row[2], row[6], row[7]])
                _ = try insertCopy.step()
            }
        }
        index += batchSize
    }
    return now() - started
}
