import RecordModel

/// The three-way field merge, deterministic on every machine: fields changed on one side
/// only are kept; a field changed on both sides goes to the record with the newer
/// `modificationDate`, ties broken by comparing the values' canonical JSON, so every machine
/// that merges the same three copies picks the same result.
public enum RecordMerge {
    /// The field every record type carries with the time of its last edit.
    public static let modificationDateField = "modificationDate"

    /// A merge of a record edited both here and on the server: the fields of the common
    /// ancestor (nil when unknown), the local record and the server's. `merge` is the default;
    /// an app may wrap it (to keep, say, the longer of two texts) and pass its own to the store.
    public typealias Handler = @Sendable (_ ancestor: [String: FieldValue]?, _ local: Record, _ server: Record) -> Result

    public struct Result: Equatable, Sendable {
        /// The merged fields.
        public var fields: [String: FieldValue]
        /// Fields changed (against the ancestor) on both sides to different values.
        public var conflictingFields: Set<String>
        /// True when the local copy brought something the server copy lacks, so the merged
        /// record must be sent back.
        public var needsUpload: Bool
        /// True when the server copy brought something the local copy lacked.
        public var changedLocally: Bool

        public init(fields: [String: FieldValue], conflictingFields: Set<String>, needsUpload: Bool, changedLocally: Bool) {
            self.fields = fields
            self.conflictingFields = conflictingFields
            self.needsUpload = needsUpload
            self.changedLocally = changedLocally
        }
    }

    /// Merges `local` and `server`, whose common ancestor (the last server copy this machine
    /// saw) had `ancestor` fields; `nil` when there is none, so every difference is a conflict.
    public static func merge(ancestor: [String: FieldValue]?, local: Record, server: Record) -> Result {
        let localWinsTies = compare(local: local, server: server)
        var merged: [String: FieldValue] = [:]
        var conflicting: Set<String> = []
        let names = Set(local.fields.keys).union(server.fields.keys).subtracting([modificationDateField])
        for name in names {
            let localValue = local.fields[name]
            let serverValue = server.fields[name]
            let chosen: FieldValue?
            if localValue == serverValue {
                chosen = serverValue
            } else if let ancestor, ancestor[name] == localValue {
                chosen = serverValue
            } else if let ancestor, ancestor[name] == serverValue {
                chosen = localValue
            } else {
                conflicting.insert(name)
                chosen = localWinsTies ? localValue : serverValue
            }
            if let chosen { merged[name] = chosen }
        }
        var serverWithoutDate = server.fields
        serverWithoutDate[modificationDateField] = nil
        var localWithoutDate = local.fields
        localWithoutDate[modificationDateField] = nil
        let needsUpload = merged != serverWithoutDate
        let changedLocally = merged != localWithoutDate
        // The merged record is as new as its newest side, unless it is simply the server copy.
        let dateSource = needsUpload ? (localWinsTies ? local : server) : server
        if let date = dateSource.fields[modificationDateField] ?? server.fields[modificationDateField] {
            merged[modificationDateField] = date
        }
        return Result(fields: merged, conflictingFields: conflicting, needsUpload: needsUpload,
                      changedLocally: changedLocally || merged[modificationDateField] != local.fields[modificationDateField])
    }

    /// The time of a record's last edit in milliseconds: its `modificationDate` field, else the
    /// server's `modified` stamp.
    public static func modificationMilliseconds(of record: Record) -> Int64 {
        record.fields[modificationDateField]?.int64Value ?? record.modified?.timestamp ?? 0
    }

    /// True when the local side wins a field changed on both sides.
    static func compare(local: Record, server: Record) -> Bool {
        let localTime = modificationMilliseconds(of: local)
        let serverTime = modificationMilliseconds(of: server)
        if localTime != serverTime { return localTime > serverTime }
        // Same time: the record whose fields sort last wins, the same on every machine.
        return canonicalFields(local.fields) > canonicalFields(server.fields)
    }

    static func canonicalFields(_ fields: [String: FieldValue]) -> String {
        fields.keys.sorted().map { "\($0)=\(fields[$0]!.json.canonicalText)" }.joined(separator: ";")
    }

    /// What an `update` must carry to turn `base` into `target`: the changed or added fields,
    /// and the names of fields to remove.
    public static func difference(from base: [String: FieldValue], to target: [String: FieldValue]) -> (changed: [String: FieldValue], removed: Set<String>) {
        var changed: [String: FieldValue] = [:]
        for (name, value) in target where base[name] != value { changed[name] = value }
        let removed = Set(base.keys.filter { target[$0] == nil })
        return (changed, removed)
    }
}

extension JSONValue {
    /// JSON text with object keys sorted, so equal values always read the same.
    var canonicalText: String {
        switch self {
        case .object(let members):
            let body = members.keys.sorted().map { key in
                JSONValue.string(key).serializedString() + ":" + members[key]!.canonicalText
            }
            return "{" + body.joined(separator: ",") + "}"
        case .array(let elements):
            return "[" + elements.map(\.canonicalText).joined(separator: ",") + "]"
        default:
            return serializedString()
        }
    }
}
