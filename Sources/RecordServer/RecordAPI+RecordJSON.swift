import RecordModel
import RecordStore

/// The answers around the records' JSON the store writes (`SerializedRecords`): its bytes are
/// copied once into the answer, which is handed on as it is.
extension RecordAPI {
    /// A feed page: `{"records":[…],"zoneID":…,"syncToken":…,"moreComing":…}` (all of
    /// `records/changes`, one entry of `changes/zone`).
    static func feedPageJSON(_ page: SerializedRecordPage) -> [UInt8] {
        var out = recordsOpening(page.records)
        out.appendLiteral(#"],"zoneID":"#)
        page.zoneID.json.serialize(into: &out)
        out.appendLiteral(#","syncToken":"#)
        JSONValue.appendString(page.syncToken, to: &out)
        if page.moreComing { out.appendLiteral(#","moreComing":true}"#) } else { out.appendLiteral(#","moreComing":false}"#) }
        return out
    }

    /// `{"records":[…]}`.
    static func recordsJSON(_ records: SerializedRecords) -> [UInt8] {
        var out = recordsOpening(records)
        out.appendLiteral("]}")
        return out
    }

    private static func recordsOpening(_ records: SerializedRecords) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(records.json.count + 256)
        out.appendLiteral(#"{"records":["#)
        out.append(contentsOf: records.json)
        return out
    }
}
