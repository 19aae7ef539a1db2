import Foundation
import RecordModel
import RecordStore

/// The steps of a `records/modify` batch of 400 records, each timed alone in this process (no
/// SQLite, no HTTP): how many microseconds a record spends in each, best of ten passes of 25
/// batches. The profile behind issue 13's write-path changes; `batch-write` measures the whole.
func writeSteps(_ options: BenchOptions) async throws -> [String: JSONValue] {
    let records = (0..<batchSize).map { benchRecord($0) }
    let body = modifyBody(zone: "Bench", records: records)
    var figures: [String: JSONValue] = [:]
    func time(_ name: String, _ step: () throws -> Void) rethrows {
        var best = Double.infinity
        for _ in 0..<10 {
            let start = now()
            for _ in 0..<25 { try step() }
            best = min(best, (now() - start) / Double(25 * batchSize) * 1e6)
        }
        figures[name + "Microseconds"] = .double((best * 1000).rounded() / 1000)
    }
    // The server reads the body straight into drafts; `parseRequestTree` is the dictionary tree
    // it read before (and every other operation still reads), for comparison.
    var parsed: ModifyRequestBody?
    try time("parseRequest") { parsed = try ModifyRequestBody.parse(body) }
    try time("parseRequestTree") { _ = try JSONValue.parse(body) }
    let entries = parsed?.operations ?? []
    var operations: [RecordOperation] = []
    time("makeOperations") { operations = entries.map { RecordOperation(type: .create, draft: $0.record ?? RecordDraft()) } }
    try time("validateBatch") { try RecordRules.validateBatch(operations) }
    var built: [Record] = []
    try time("readRecord") {
        built = try operations.map { try Record(draft: $0.draft, schemaType: { _, field in field == "value" ? .int64 : .string }) }
    }
    var fields: [[UInt8]] = []
    time("serializeFields") { fields = built.map { $0.fieldsJSONBytes() } }
    time("indexEntriesAllFields") { for record in built { _ = QueryIndex.entries(record.fields, indexed: ["name", "value", "note"]) } }
    let stamp = ChangeStamp(timestamp: 1, userRecordName: "_bench")
    let stored = built.enumerated().map { index, record in
        StoredRecord(recordName: record.recordName, recordType: record.recordType, changeTag: "1-\(index)", fieldsJSON: fields[index],
                     parent: nil, created: stamp, modified: stamp, zoneID: ZoneID(zoneName: "Bench"))
    }
    time("writeAnswer") { _ = JSONValue.rawArray(stored, estimatedBytes: { $0.estimatedJSONBytes }, write: { record, out in record.write(into: &out) }) }
    return figures
}
