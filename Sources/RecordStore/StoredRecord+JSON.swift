import RecordModel

extension StoredRecord {
    /// The record dictionary, serialized straight into bytes: feeds and batch answers carry
    /// hundreds of records, and building a dictionary per record would cost more than the query.
    package func json(desiredKeys: Set<String>? = nil) -> JSONValue {
        var out: [UInt8] = []
        out.reserveCapacity(estimatedJSONBytes)
        write(into: &out, desiredKeys: desiredKeys)
        return .raw(out)
    }

    /// An upper estimate of the dictionary's size without `desiredKeys`, to reserve once.
    package var estimatedJSONBytes: Int { fieldsJSON.count + recordName.utf8.count + recordType.utf8.count + 320 + (shareJSON?.count ?? 0) }

    package func write(into out: inout [UInt8], desiredKeys: Set<String>? = nil) {
        write(into: &out, desiredKeys: desiredKeys, links: AssetLinks.current)
    }

    /// As `write(into:desiredKeys:)`, with the request's `AssetLinks` read once by the caller.
    package func write(into out: inout [UInt8], desiredKeys: Set<String>?, links: AssetLinks?) {
        var memo = StoredRecord.AnswerMemo()
        write(into: &out, desiredKeys: desiredKeys, links: links, memo: &memo)
    }

    /// The JSON of the last change stamp and zone an answer wrote: a batch's records share them
    /// (one writer, one clock reading, one zone), so a batch's answer escapes each once.
    package struct AnswerMemo {
        var stamp: ChangeStamp?
        var stampBytes: [UInt8] = []
        var zoneID: ZoneID?
        var zoneBytes: [UInt8] = []

        package init() {}

        mutating func append(_ stamp: ChangeStamp, to out: inout [UInt8]) {
            if stamp != self.stamp {
                stampBytes.removeAll(keepingCapacity: true)
                StoredRecord.write(stamp, to: &stampBytes)
                self.stamp = stamp
            }
            out.append(contentsOf: stampBytes)
        }

        mutating func append(_ zoneID: ZoneID, to out: inout [UInt8]) {
            if zoneID != self.zoneID {
                zoneBytes.removeAll(keepingCapacity: true)
                StoredRecord.write(zoneID, to: &zoneBytes)
                self.zoneID = zoneID
            }
            out.append(contentsOf: zoneBytes)
        }
    }

    /// A zone's dictionary, its members always in one order (a dictionary's order differs from
    /// one instance to the next): `{"zoneName":…,"ownerRecordName":…}`.
    package static func write(_ zoneID: ZoneID, to out: inout [UInt8]) {
        out.appendLiteral(#"{"zoneName":"#)
        JSONValue.appendString(zoneID.zoneName, to: &out)
        if let owner = zoneID.ownerRecordName {
            out.appendLiteral(#","ownerRecordName":"#)
            JSONValue.appendString(owner, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// As `write(into:desiredKeys:links:)`, the stamps and zone written through `memo`, which the
    /// caller keeps from one record of an answer to the next.
    package func write(into out: inout [UInt8], desiredKeys: Set<String>?, links: AssetLinks?, memo: inout AnswerMemo) {
        out.appendLiteral(#"{"recordName":"#)
        JSONValue.appendString(recordName, to: &out)
        out.appendLiteral(#","recordType":"#)
        JSONValue.appendString(recordType, to: &out)
        out.appendLiteral(#","recordChangeTag":"#)
        JSONValue.appendString(changeTag, to: &out)
        out.appendLiteral(#","fields":"#)
        if let links, AssetFields.mayHoldAssets(fieldsJSON) {
            // Each asset gets the download URL for this request's caller.
            var all = (try? JSONValue.parse(fieldsJSON).objectValue) ?? [:]
            if let desiredKeys { all = all.filter { desiredKeys.contains($0.key) } }
            for (name, field) in all { all[name] = links.linked(field, fieldName: name, of: self) }
            JSONValue.object(all).serialize(into: &out)
        } else if let desiredKeys {
            let all = (try? JSONValue.parse(fieldsJSON).objectValue) ?? [:]
            JSONValue.object(all.filter { desiredKeys.contains($0.key) }).serialize(into: &out)
        } else {
            out.append(contentsOf: fieldsJSON)
        }
        if let shareJSON {
            out.append(UInt8(ascii: ","))
            out.append(contentsOf: shareJSON)
        }
        out.appendLiteral(#","created":"#)
        memo.append(created, to: &out)
        out.appendLiteral(#","modified":"#)
        memo.append(modified, to: &out)
        out.appendLiteral(#","zoneID":"#)
        memo.append(zoneID, to: &out)
        if let parent {
            out.appendLiteral(#","parent":{"recordName":"#)
            JSONValue.appendString(parent, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "}"))
    }

    fileprivate static func write(_ stamp: ChangeStamp, to out: inout [UInt8]) {
        out.appendLiteral(#"{"timestamp":"#)
        JSONValue.appendInteger(stamp.timestamp, to: &out)
        if let user = stamp.userRecordName {
            out.appendLiteral(#","userRecordName":"#)
            JSONValue.appendString(user, to: &out)
        }
        // Always present: some CloudKit clients drop the whole stamp without it.
        out.appendLiteral(#","deviceID":"#)
        JSONValue.appendString(stamp.deviceID ?? ChangeStamp.placeholderDeviceID, to: &out)
        out.append(UInt8(ascii: "}"))
    }
}
