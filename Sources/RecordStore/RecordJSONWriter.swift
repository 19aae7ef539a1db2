import RecordModel

/// Which of a record's fields its JSON carries (`desiredKeys`, per record where named) and how
/// its assets link for the reader (`AssetLinks`).
package struct RecordJSONOptions: Sendable {
    package var desiredKeys: Set<String>?
    package var keysByRecord: [String: Set<String>]
    package var links: AssetLinks?
    /// What the answer begins with, written before the first record (`{"records":[`): the
    /// answer is then finished in the records' own buffer instead of copying them into another.
    package var opening: [UInt8]

    package init(desiredKeys: Set<String>?, keysByRecord: [String: Set<String>] = [:], links: AssetLinks?, opening: [UInt8] = []) {
        self.desiredKeys = desiredKeys
        self.keysByRecord = keysByRecord
        self.links = links
        self.opening = opening
    }

    package func desiredKeys(for recordName: String) -> Set<String>? {
        keysByRecord.isEmpty ? desiredKeys : keysByRecord[recordName] ?? desiredKeys
    }
}

/// One record row's columns as the store holds them, borrowed for the time of one write: a feed
/// page's record JSON is written from them, without a `StoredRecord` per row (its
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

    /// Whether the record's JSON is the row's as it is: the whole fields dictionary, no asset link to
    /// add, and not the zone's share (whose members are read apart). Else the row becomes a
    /// `StoredRecord` and is written as every other answer writes one.
    package func isCopiedAsStored(_ options: RecordJSONOptions) -> Bool {
        if options.desiredKeys != nil || !options.keysByRecord.isEmpty { return false }
        if RecordRowBytes.isShareRecordName(name) { return false }
        return options.links == nil || !AssetFields.mayHoldAssets(fields)
    }

    private static let shareRecordName = Array(ShareRules.recordName.utf8)

    /// Whether a name read in place is the zone's share record's (every feed row asks: lengths first).
    package static func isShareRecordName(_ name: UnsafeRawBufferPointer) -> Bool {
        name.count == shareRecordName.count && name.elementsEqual(shareRecordName)
    }

    /// The record's JSON dictionary, as `StoredRecord.write` writes it, from the row's bytes.
    package func write(into out: inout [UInt8], zoneJSON: [UInt8]) {
        let strings = ReservedBytes.stringBound(name.count) + ReservedBytes.stringBound(type.count) + ReservedBytes.stringBound(tag.count)
            + ReservedBytes.stringBound(parent?.count ?? 0)
        // 160: the keys and braces (117 bytes with a parent).
        let maximum = 160 + strings + fields.count + zoneJSON.count
            + RecordRowBytes.stampBound(createdBy, createdDevice) + RecordRowBytes.stampBound(modifiedBy, modifiedDevice)
        out.appendReserved(atMost: maximum) { out in
            out.literal(#"{"recordName":"#)
            out.string(utf8: name)
            out.literal(#","recordType":"#)
            out.string(utf8: type)
            out.literal(#","recordChangeTag":"#)
            out.string(utf8: tag)
            out.literal(#","fields":"#)
            out.bytes(fields)
            out.literal(#","created":"#)
            RecordRowBytes.writeStamp(createdAt, createdBy, createdDevice, into: &out)
            out.literal(#","modified":"#)
            RecordRowBytes.writeStamp(modifiedAt, modifiedBy, modifiedDevice, into: &out)
            out.literal(#","zoneID":"#)
            out.bytes(zoneJSON)
            if let parent {
                out.literal(#","parent":{"recordName":"#)
                out.string(utf8: parent)
                out.byte(UInt8(ascii: "}"))
            }
            out.byte(UInt8(ascii: "}"))
        }
    }

    /// A tombstone's dictionary in a feed, with the deletion's stamp as `modified` (the row's
    /// modified columns are the deleter's), so a client can tell who deleted.
    package func writeTombstone(into out: inout [UInt8]) {
        // 80: the keys and braces (56 bytes).
        let maximum = 80 + ReservedBytes.stringBound(name.count) + ReservedBytes.stringBound(type.count)
            + RecordRowBytes.stampBound(modifiedBy, modifiedDevice)
        out.appendReserved(atMost: maximum) { out in
            RecordRowBytes.writeTombstone(name: name, type: type, into: &out)
            // A row whose `modified_by` is empty names no deleter, so it gets no stamp.
            if !modifiedBy.isEmpty {
                out.literal(#","modified":"#)
                RecordRowBytes.writeStamp(modifiedAt, modifiedBy, modifiedDevice, into: &out)
            }
            out.byte(UInt8(ascii: "}"))
        }
    }

    /// A tombstone's first members, without its closing brace (the deletion's stamp may follow):
    /// at most 50 bytes besides the strings'.
    static func writeTombstone(name: UnsafeRawBufferPointer, type: UnsafeRawBufferPointer, into out: inout ReservedBytes) {
        out.literal(#"{"recordName":"#)
        out.string(utf8: name)
        out.literal(#","recordType":"#)
        out.string(utf8: type)
        out.literal(#","deleted":true"#)
    }

    /// A tombstone of `RecordChange.deleted`: as a row's, from the change's values.
    package static func writeTombstone(name: String, type: String, modified: ChangeStamp?, into out: inout [UInt8]) {
        var name = name, type = type
        let user = modified?.userRecordName.flatMap { $0.isEmpty ? nil : Array($0.utf8) }
        let device = modified?.deviceID.map { Array($0.utf8) }
        let maximum = 80 + ReservedBytes.stringBound(name.utf8.count) + ReservedBytes.stringBound(type.utf8.count)
            + (user.map { user in user.withUnsafeBytes { stampBound($0, nil) } + ReservedBytes.stringBound(device?.count ?? 0) } ?? 0)
        name.withUTF8 { name in
            type.withUTF8 { type in
                out.appendReserved(atMost: maximum) { out in
                    writeTombstone(name: UnsafeRawBufferPointer(name), type: UnsafeRawBufferPointer(type), into: &out)
                    if let modified, let user {
                        out.literal(#","modified":"#)
                        user.withUnsafeBytes { user in
                            if let device {
                                device.withUnsafeBytes { writeStamp(modified.timestamp, user, $0, into: &out) }
                            } else {
                                writeStamp(modified.timestamp, user, nil, into: &out)
                            }
                        }
                    }
                    out.byte(UInt8(ascii: "}"))
                }
            }
        }
    }

    private static let placeholderDevice = Array(ChangeStamp.placeholderDeviceID.utf8)

    /// The most bytes `writeStamp` writes for these strings (a device of nil is the placeholder's).
    static func stampBound(_ user: UnsafeRawBufferPointer, _ device: UnsafeRawBufferPointer?) -> Int {
        // 60: the keys, braces and a minus sign (45 bytes).
        60 + ReservedBytes.integerBound + ReservedBytes.stringBound(user.count) + ReservedBytes.stringBound(device?.count ?? placeholderDevice.count)
    }

    static func writeStamp(_ timestamp: Int64, _ user: UnsafeRawBufferPointer, _ device: UnsafeRawBufferPointer?,
                           into out: inout ReservedBytes)
    {
        out.literal(#"{"timestamp":"#)
        out.integer(timestamp)
        out.literal(#","userRecordName":"#)
        out.string(utf8: user)
        // Always present: some CloudKit clients drop the whole stamp without it.
        out.literal(#","deviceID":"#)
        if let device {
            out.string(utf8: device)
        } else {
            placeholderDevice.withUnsafeBytes { out.string(utf8: $0) }
        }
        out.byte(UInt8(ascii: "}"))
    }
}

/// Records' JSON dictionaries written one after another, comma-separated, into one buffer
/// reserved once, while the store reads the rows: a feed page or a lookup as record JSON, which
/// the API puts in its answer as it is.
package struct RecordJSONWriter {
    private var out: [UInt8] = []
    private var count = 0
    /// The zone of the rows being written, and its JSON (read once a page, not once a record).
    package private(set) var zoneID: ZoneID?
    private var zoneJSON: [UInt8] = []
    private var memo = StoredRecord.AnswerMemo()
    package let options: RecordJSONOptions

    /// `rows`: how many records the page may hold. The buffer is reserved once for a kilobyte a
    /// record: growing a page of 400 records past its reservation copied it whole, and pages
    /// never touched cost no memory.
    package init(rows: Int, options: RecordJSONOptions) {
        self.options = options
        // 256: the answer's last members (the zone, the token), written after the records.
        out.reserveCapacity(min(rows, 1_000) * 1_024 + options.opening.count + 256)
        out.append(contentsOf: options.opening)
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

    /// A row that `isCopiedAsStored` with this writer's options.
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
        case .deleted(let name, let type, let modified):
            separate()
            RecordRowBytes.writeTombstone(name: name, type: type, modified: modified, into: &out)
        }
    }

    /// A lookup's entry for a record it could not read.
    package mutating func append(_ error: ServerError) {
        separate()
        error.json().serialize(into: &out)
    }

    /// The records written.
    package consuming func finish() -> SerializedRecords { SerializedRecords(json: out, count: count, openingCount: options.opening.count) }
}

/// Record dictionaries as JSON, comma-separated (no brackets), and how many there are; after
/// `openingCount` bytes of the answer's beginning when the options gave one.
package struct SerializedRecords: Sendable {
    package var json: [UInt8]
    package var count: Int
    package var openingCount: Int

    package init(json: [UInt8], count: Int, openingCount: Int = 0) {
        self.json = json
        self.count = count
        self.openingCount = openingCount
    }

    /// The bytes, left to the caller alone (appending to them then copies nothing).
    package mutating func takeJSON() -> [UInt8] {
        defer { json = [] }
        return json
    }
}

/// One page of a zone's change feed with its records as JSON (`RecordJSONWriter`).
package struct SerializedRecordPage: Sendable {
    package var zoneID: ZoneID
    package var records: SerializedRecords
    package var syncToken: String
    package var moreComing: Bool

    package init(zoneID: ZoneID, records: SerializedRecords, syncToken: String, moreComing: Bool) {
        self.zoneID = zoneID
        self.records = records
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

