import RecordModel
import RecordStore

/// The answers around the records' JSON the store writes (`SerializedRecords`). Where the store
/// was given the answer's beginning (`RecordJSONOptions.opening`) the answer is finished in the
/// records' own buffer; otherwise the records are copied once into it.
extension RecordAPI {
    /// The beginning of an answer of records (`records/changes`, `records/lookup`, one entry of
    /// `changes/zone`).
    static let recordsOpening = Array(#"{"records":["#.utf8)
    /// The beginning of a `changes/zone` answer of one zone, its entry's records next.
    static let oneZoneChangesOpening = Array(#"{"zones":[{"records":["#.utf8)

    /// A feed page: `{"records":[…],"zoneID":…,"syncToken":…,"moreComing":…}` (all of
    /// `records/changes`, one entry of `changes/zone`), after whatever the store's opening began.
    static func feedPageJSON(_ page: consuming SerializedRecordPage) -> [UInt8] {
        var out = opened(&page.records)
        out.appendLiteral(#"],"zoneID":"#)
        StoredRecord.write(page.zoneID, to: &out)
        out.appendLiteral(#","syncToken":"#)
        JSONValue.appendString(page.syncToken, to: &out)
        if page.moreComing { out.appendLiteral(#","moreComing":true}"#) } else { out.appendLiteral(#","moreComing":false}"#) }
        return out
    }

    /// `{"records":[…]}`.
    static func recordsJSON(_ records: consuming SerializedRecords) -> [UInt8] {
        var out = opened(&records)
        out.appendLiteral("]}")
        return out
    }

    /// The records after their opening: their own buffer when the store wrote the opening, else
    /// a copy after `{"records":[`.
    private static func opened(_ records: inout SerializedRecords) -> [UInt8] {
        if records.openingCount > 0 { return records.takeJSON() }
        var out: [UInt8] = []
        out.reserveCapacity(records.json.count + 256)
        out.append(contentsOf: recordsOpening)
        out.append(contentsOf: records.json)
        return out
    }
}
