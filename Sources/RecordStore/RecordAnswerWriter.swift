import RecordModel

/// What a request asks of each record it is answered: the keys it wants (`desiredKeys`, per
/// record where a lookup names them) and the asset links of its caller.
package struct RecordAnswerOptions: Sendable {
    package var desiredKeys: Set<String>?
    package var keysByRecord: [String: Set<String>]
    package var links: AssetLinks?

    package init(desiredKeys: Set<String>?, keysByRecord: [String: Set<String>] = [:], links: AssetLinks?) {
        self.desiredKeys = desiredKeys
        self.keysByRecord = keysByRecord
        self.links = links
    }

    package func desiredKeys(for recordName: String) -> Set<String>? {
        keysByRecord.isEmpty ? desiredKeys : keysByRecord[recordName] ?? desiredKeys
    }
}

/// One record row's columns as the store holds them, borrowed for the time of one write: a feed
/// page is written from them straight into its answer, without a `StoredRecord` per row (its
/// strings and arrays, made on the store's thread and freed on another, cost more than the
/// read). `fields` is the stored fields dictionary, spliced in as it was saved.
package struct RecordRowBytes {
    package var name: UnsafeRawBufferPointer
    package var type: UnsafeRawBufferPointer
    package var tag: UnsafeRawBufferPointer
    package var deleted: Bool
    package var fields: UnsafeRawBufferPointer
    package var parent: UnsafeRawBufferPointer?
    package var createdAt: Int64
    package var createdBy: UnsafeRawBufferPointer
    package var createdDevice: UnsafeRawBufferPointer?
    package var modifiedAt: Int64
    package var modifiedBy: UnsafeRawBufferPointer
    package var modifiedDevice: UnsafeRawBufferPointer?

    package init(name: UnsafeRawBufferPointer, type: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, deleted: Bool,
                 fields: UnsafeRawBufferPointer, parent: UnsafeRawBufferPointer?, createdAt: Int64, createdBy: UnsafeRawBufferPointer,
                 createdDevice: UnsafeRawBufferPointer?, modifiedAt: Int64, modifiedBy: UnsafeRawBufferPointer,
                 modifiedDevice: UnsafeRawBufferPointer?)
    {
        self.name = name
        self.type = type
        self.tag = tag
        self.deleted = deleted
        self.fields = fields
        self.parent = parent
        self.createdAt = createdAt
        self.createdBy = createdBy
        self.createdDevice = createdDevice
        self.modifiedAt = modifiedAt
        self.modifiedBy = modifiedBy
        self.modifiedDevice = modifiedDevice
    }

    package var recordName: String { String(decoding: name, as: UTF8.self) }
    package var recordType: String { String(decoding: type, as: UTF8.self) }

    /// Whether the answer copies the row as it is: the whole fields dictionary, no asset link to
    /// add, and not the zone's share (whose members are read apart). Else the row becomes a
    /// `StoredRecord` and is written as every other answer writes one.
    package func isCopiedAsStored(_ options: RecordAnswerOptions) -> Bool {
        if options.desiredKeys != nil || !options.keysByRecord.isEmpty { return false }
        if name.elementsEqual(RecordRowBytes.shareRecordName) { return false }
        return options.links == nil || !AssetFields.mayHoldAssets(fields)
    }

    private static let shareRecordName = Array(ShareRules.recordName.utf8)

    /// The record as `StoredRecord.write` answers it, from the row's bytes.
    package func write(into out: inout [UInt8], zoneJSON: [UInt8]) {
        out.appendLiteral(#"{"recordName":"#)
        JSONValue.appendString(utf8: name, to: &out)
        out.appendLiteral(#","recordType":"#)
        JSONValue.appendString(utf8: type, to: &out)
        out.appendLiteral(#","recordChangeTag":"#)
        JSONValue.appendString(utf8: tag, to: &out)
        out.appendLiteral(#","fields":"#)
        out.append(contentsOf: fields)
        out.appendLiteral(#","created":"#)
        RecordRowBytes.writeStamp(createdAt, createdBy, createdDevice, into: &out)
        out.appendLiteral(#","modified":"#)
        RecordRowBytes.writeStamp(modifiedAt, modifiedBy, modifiedDevice, into: &out)
        out.appendLiteral(#","zoneID":"#)
        out.append(contentsOf: zoneJSON)
        if let parent {
            out.appendLiteral(#","parent":{"recordName":"#)
            JSONValue.appendString(utf8: parent, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "}"))
    }

    /// A tombstone's entry in a feed.
    package func writeTombstone(into out: inout [UInt8]) {
        RecordRowBytes.writeTombstone(name: name, type: type, into: &out)
    }

    package static func writeTombstone(name: UnsafeRawBufferPointer, type: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        out.appendLiteral(#"{"recordName":"#)
        JSONValue.appendString(utf8: name, to: &out)
        out.appendLiteral(#","recordType":"#)
        JSONValue.appendString(utf8: type, to: &out)
        out.appendLiteral(#","deleted":true}"#)
    }

    private static let placeholderDevice = Array(ChangeStamp.placeholderDeviceID.utf8)

    private static func writeStamp(_ timestamp: Int64, _ user: UnsafeRawBufferPointer, _ device: UnsafeRawBufferPointer?,
                                   into out: inout [UInt8])
    {
        out.appendLiteral(#"{"timestamp":"#)
        JSONValue.appendInteger(timestamp, to: &out)
        out.appendLiteral(#","userRecordName":"#)
        JSONValue.appendString(utf8: user, to: &out)
        // Always present: some CloudKit clients drop the whole stamp without it.
        out.appendLiteral(#","deviceID":"#)
        if let device {
            JSONValue.appendString(utf8: device, to: &out)
        } else {
            placeholderDevice.withUnsafeBytes { JSONValue.appendString(utf8: $0, to: &out) }
        }
        out.append(UInt8(ascii: "}"))
    }
}

/// A page of records written as its answer while the store reads the rows: one buffer, reserved
/// once, handed on as it is. A change feed's page is `{"records":[…],"zoneID":…,"syncToken":…,
/// "moreComing":…}` (all of `records/changes`, one entry of `changes/zone`); a lookup's is
/// `{"records":[…]}`.
package struct RecordAnswerWriter {
    private var out: [UInt8] = []
    private var count = 0
    /// The zone of the rows being written, and its JSON (read once a page, not once a record).
    package private(set) var zoneID: ZoneID?
    private var zoneJSON: [UInt8] = []
    private var memo = StoredRecord.AnswerMemo()
    package let options: RecordAnswerOptions

    /// `rows`: how many records the page may hold. The buffer is reserved once for a kilobyte a
    /// record: growing a page of 400 records past its reservation copied it whole, and pages
    /// never touched cost no memory.
    package init(rows: Int, options: RecordAnswerOptions) {
        self.options = options
        out.reserveCapacity(160 + min(rows, 1_000) * 1_024)
        out.appendLiteral(#"{"records":["#)
    }

    /// The zone the next rows are in.
    package mutating func setZone(_ zoneID: ZoneID) {
        guard zoneID != self.zoneID else { return }
        self.zoneID = zoneID
        zoneJSON.removeAll(keepingCapacity: true)
        memo.append(zoneID, to: &zoneJSON)
    }

    private mutating func separate() {
        if count > 0 { out.append(UInt8(ascii: ",")) }
        count += 1
    }

    /// A row that `isCopiedAsStored` for this answer's options.
    package mutating func appendStored(_ row: RecordRowBytes) {
        separate()
        if row.deleted { row.writeTombstone(into: &out) } else { row.write(into: &out, zoneJSON: zoneJSON) }
    }

    /// A record read as a `StoredRecord` (its share attached, where it is the zone's share).
    package mutating func append(_ record: StoredRecord) {
        separate()
        record.write(into: &out, desiredKeys: options.desiredKeys(for: record.recordName), links: options.links, memo: &memo)
    }

    package mutating func append(_ change: RecordChange) {
        switch change {
        case .changed(let record): append(record)
        case .deleted(var name, var type):
            separate()
            name.withUTF8 { name in
                type.withUTF8 { RecordRowBytes.writeTombstone(name: UnsafeRawBufferPointer(name), type: UnsafeRawBufferPointer($0), into: &out) }
            }
        }
    }

    /// A lookup's entry for a record it could not answer.
    package mutating func append(_ error: ServerError) {
        separate()
        error.json().serialize(into: &out)
    }

    /// The feed page's answer, closed with its zone and token.
    package consuming func finish(zoneID: ZoneID, syncToken: String, moreComing: Bool) -> [UInt8] {
        setZone(zoneID)
        out.appendLiteral(#"],"zoneID":"#)
        out.append(contentsOf: zoneJSON)
        out.appendLiteral(#","syncToken":"#)
        JSONValue.appendString(syncToken, to: &out)
        out.appendLiteral(#","moreComing":"#)
        if moreComing { out.appendLiteral("true}") } else { out.appendLiteral("false}") }
        return out
    }

    /// The lookup's answer.
    package consuming func finish() -> [UInt8] {
        out.appendLiteral("]}")
        return out
    }
}

/// A feed page written by `RecordAnswerWriter`.
package struct ZoneChangesAnswer: Sendable {
    package var zoneID: ZoneID
    /// The whole page's JSON.
    package var json: [UInt8]

    package init(zoneID: ZoneID, json: [UInt8]) {
        self.zoneID = zoneID
        self.json = json
    }
}

extension RecordStorage {
    /// `zoneChanges`, answered: the default writes the page from its `StoredRecord`s; a backend
    /// writes it from its rows as it reads them.
    package func zoneChangesAnswer(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                                   recordTypes: Set<String>?, options: RecordAnswerOptions) async throws -> [UInt8]
    {
        let page = try await zoneChanges(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes)
        var writer = RecordAnswerWriter(rows: page.changes.count, options: options)
        for change in page.changes { writer.append(change) }
        return writer.finish(zoneID: page.zoneID, syncToken: page.syncToken, moreComing: page.moreComing)
    }

    /// `lookupRecords`, answered `{"records":[…]}` in the order asked.
    package func lookupRecordsAnswer(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String],
                                     options: RecordAnswerOptions) async throws -> [UInt8]
    {
        let results = try await lookupRecords(scope, zone: zone, recordNames: recordNames)
        var writer = RecordAnswerWriter(rows: results.count, options: options)
        for result in results {
            switch result {
            case .success(let record): writer.append(record)
            case .failure(let error): writer.append(error)
            }
        }
        return writer.finish()
    }
}
