import Foundation
import RecordModel

/// (12) `records/query` read to its end against a real release `scorebookd`: a zone of
/// `--records` records, queried by record type with `resultsLimit` 400 (the daemon answers at
/// most 200 a page) and each page's `continuationMarker` followed until an answer has none, in
/// several rounds; records/s of the best and the median round, and the first page's latency.
/// A round that returns fewer or more records than were loaded fails the scenario.
func queryPaging(_ options: BenchOptions, _ backend: BenchBackend) async throws -> [String: JSONValue] {
    let directory = temporaryDirectory("query-\(backend.rawValue)")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let database = backend == .postgres ? try BenchPostgres.createDatabase() : nil
    let daemon = try DaemonUnderTest(directory: directory, database: database, extraArguments: ["--rate-limit", "1000000"])
    let connection = try RawHTTPConnection(port: daemon.port)
    try createZone("Bench", on: daemon, connection)
    let loadStarted = now()
    for start in stride(from: 0, to: options.records, by: batchSize) {
        let records = (start..<min(start + batchSize, options.records)).map { benchRecord($0) }
        try post(modifyBody(zone: "Bench", records: records), to: "/records/modify", on: daemon, connection)
    }
    let loadSeconds = now() - loadStarted

    let rounds = 5
    var roundSeconds: [Double] = [], firstPages: [Double] = []
    var pages = 0
    for _ in 0..<rounds {
        let started = now()
        var (seen, marker, pagesRead) = (0, String?.none, 0)
        // Bounded: even a page of one record would end within records + 1 pages.
        repeat {
            var request: [String: JSONValue] = ["zoneID": ["zoneName": "Bench"], "resultsLimit": 400, "query": ["recordType": "Bench"]]
            if let marker { request["continuationMarker"] = .string(marker) }
            let page = try queryPage(daemon, connection, JSONValue.object(request).serialized())
            if pagesRead == 0 { firstPages.append((now() - started) * 1000) }
            seen += page.records
            marker = page.continuationMarker
            pagesRead += 1
        } while marker != nil && pagesRead <= options.records
        roundSeconds.append(now() - started)
        guard seen == options.records, marker == nil else {
            throw RawHTTPConnection.Failure(description: "records/query returned \(seen) of \(options.records) records in \(pagesRead) pages")
        }
        pages = pagesRead
    }
    _ = try daemon.stop()
    let rates = roundSeconds.map { Double(options.records) / $0 }
    return [
        "records": .int(Int64(options.records)), "rounds": .int(Int64(rounds)), "pagesPerRound": .int(Int64(pages)),
        "recordsPerSecondBest": .double(rates.max()!), "recordsPerSecondMedian": .double(Stats(samples: rates).median),
        "firstPageMillisecondsMedian": .double(Stats(samples: firstPages).median),
        "loadRecordsPerSecond": .double(Double(options.records) / loadSeconds),
    ]
}

/// One `records/query` answer, scanned rather than parsed (as the feed scenarios do, so the
/// client's work stays small beside the daemon's): its record count and its continuation marker.
/// Each bench record carries one `"recordName":` key.
private func queryPage(_ daemon: DaemonUnderTest, _ connection: RawHTTPConnection, _ body: [UInt8]) throws
    -> (records: Int, continuationMarker: String?)
{
    let (status, answer) = try connection.request("POST", daemon.databasePath + "/records/query", token: daemon.token, body: body)
    guard status == 200, byteOccurrences(of: "serverErrorCode", in: answer).isEmpty else {
        throw RawHTTPConnection.Failure(description: "records/query answered \(status): \(String(decoding: answer.prefix(300), as: UTF8.self))")
    }
    let records = byteOccurrences(of: #""recordName":"#, in: answer).count
    guard let valueStart = byteOccurrences(of: #""continuationMarker":"#, in: answer).first else { return (records, nil) }
    // The marker is a JSON string: from its opening quote to the first quote no backslash escapes.
    var index = valueStart + 1
    while index < answer.count, answer[index] != UInt8(ascii: "\"") { index += answer[index] == UInt8(ascii: "\\") ? 2 : 1 }
    guard index < answer.count, let marker = try JSONValue.parse(Array(answer[valueStart...index])).stringValue else {
        throw RawHTTPConnection.Failure(description: "records/query answered an unreadable continuationMarker")
    }
    return (records, marker)
}
