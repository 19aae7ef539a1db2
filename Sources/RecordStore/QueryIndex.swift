import RecordModel

/// The query index, kept by both backends in the transaction of every record write: one entry
/// (zone, record type, field, key, record name) per indexed field of a live record whose value a
/// filter or sort can compare, plus per-(zone, type, field) entry counts (`query_counts`; the empty
/// field name counts the live records of the type, always kept).
///
/// A field is indexed in a zone from the first query that scans it (`query_fields`, filled from
/// the type's live records then, in one write transaction): a write keeps entries only for its
/// zone's indexed fields, so fields nobody queries cost writes nothing (three indexed fields took
/// more than half of a batch write's time), while every query still reads index ranges.
///
/// A key's byte order is `ComparableValue`'s order: numbers ("n" and the double's order-preserving
/// bits in hex) before text ("t" and the UTF-8 bytes in hex, so SQLite's BINARY and PostgreSQL's
/// "C" collation agree with Swift's code-point order, and no byte is NUL). Text keys keep only
/// the first `maximumTextBytes` bytes, so an entry fits a PostgreSQL B-tree row; truncation is
/// monotone, so a key range is a superset of the matching values and every filter is re-checked
/// on the record (only the order among long strings sharing that prefix falls back to names).
package enum QueryIndex {
    static let maximumTextBytes = 256
    /// The field name under which `query_counts` counts the type's live records.
    package static let recordCountField = ""

    package struct Entry: Sendable {
        package var field: String
        package var key: String
    }

    package struct CountKey: Hashable, Sendable {
        package var recordType: String
        package var field: String

        package init(recordType: String, field: String) {
            self.recordType = recordType
            self.field = field
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func key(_ value: ComparableValue) -> String {
        var bytes: [UInt8] = []
        switch value {
        case .number(let number):
            bytes.reserveCapacity(17)
            bytes.append(UInt8(ascii: "n"))
            let normalized = number == 0 ? 0 : number  // -0 == 0
            var bits = normalized.bitPattern
            bits = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
            for shift in stride(from: 60, through: 0, by: -4) { bytes.append(hexDigits[Int((bits >> UInt64(shift)) & 0xF)]) }
        case .text(let text):
            let utf8 = text.utf8.prefix(maximumTextBytes)
            bytes.reserveCapacity(1 + 2 * utf8.count)
            bytes.append(UInt8(ascii: "t"))
            for byte in utf8 {
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0xF)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func key(_ json: JSONValue) -> String? { ComparableValue(json).map { key($0) } }

    /// The entries of a record's fields JSON (`{"name": {"value": …, "type": …}}`).
    package static func entries(_ fieldsJSON: [UInt8]) -> [Entry] {
        guard let fields = (try? JSONValue.parse(fieldsJSON))?.objectValue else { return [] }
        return fields.compactMap { name, field in
            guard let value = field["value"], let key = key(value) else { return nil }
            return Entry(field: name, key: key)
        }
    }

    /// The entries of a record's typed fields for the `indexed` ones: what `entries(_:)` finds in
    /// their stored JSON, without serializing and parsing it again.
    package static func entries(_ fields: [String: FieldValue], indexed: Set<String>) -> [Entry] {
        guard !indexed.isEmpty else { return [] }
        return fields.compactMap { name, field in
            guard indexed.contains(name) else { return nil }
            return key(field.value).map { Entry(field: name, key: $0) }
        }
    }

    /// The entries of a record's stored fields JSON for the `indexed` ones (nothing is parsed when
    /// the type has no indexed field).
    package static func entries(_ fieldsJSON: [UInt8], indexed: Set<String>) -> [Entry] {
        guard !indexed.isEmpty else { return [] }
        return entries(fieldsJSON).filter { indexed.contains($0.field) }
    }

    /// How the entry counts change when a record goes from `old` to `new` (nil: not live).
    package static func countChanges(old: (type: String, entries: [Entry])?, new: (type: String, entries: [Entry])?,
                                     into counts: inout [CountKey: Int64]) {
        if let old {
            counts[CountKey(recordType: old.type, field: recordCountField), default: 0] -= 1
            for entry in old.entries { counts[CountKey(recordType: old.type, field: entry.field), default: 0] -= 1 }
        }
        if let new {
            counts[CountKey(recordType: new.type, field: recordCountField), default: 0] += 1
            for entry in new.entries { counts[CountKey(recordType: new.type, field: entry.field), default: 0] += 1 }
        }
    }
}

/// A position in an index scan: strictly after this key and record name.
package struct IndexPosition: Sendable, Equatable {
    package var key: String
    package var recordName: String
}

/// One read a query asks its backend for: live records of the query's type in the zone, at most
/// `count`, in an order an index serves.
package enum QueryScan: Sendable, Equatable {
    /// By record name, names after `after`.
    case byName(after: String?, count: Int)
    /// Records with an index entry for `field` whose key is within `lower...upper` (each bound
    /// optional, inclusive), by key (descending when `descending`) then record name ascending,
    /// strictly after `after`. The backend returns each record with its entry's key.
    case byKey(field: String, lower: String?, upper: String?, descending: Bool, after: IndexPosition?, count: Int)
    /// Records with no index entry for `field` (the value is missing or not comparable), by name after `after`.
    case withoutKey(field: String, after: String?, count: Int)
}

/// Runs `records/query` as a sequence of bounded index scans (`QueryScan`) that a backend
/// executes in one read transaction: `nextScan()`, the backend fetches, `consume(_:)`, until
/// `nextScan()` is nil; then `page()`.
///
/// Plans: no sort (or by record name): by name, or through the index of an `EQUALS` filter's
/// field. One sort on a field: the field's index in the sort's direction, and the records without
/// a value (after them ascending, before them descending; skipped when a filter on the field
/// excludes them or `query_counts` shows every record has one). These are ordered: a page reads
/// about `limit + 1` matching rows. Anything else (several sorts, a system timestamp sort) visits
/// every candidate in chunks, keeping the best `limit + 1`: memory stays bounded, not time.
package struct QueryCursor {
    package let query: RecordQuery
    let limit: Int
    let zoneRowID: Int64
    let after: QueryRules.SortKey?
    /// Whether scans return matches in the query's order (otherwise every candidate is visited).
    let ordered: Bool
    /// Whether some filter is not fully answered by the scans' key ranges (so reads are in larger
    /// chunks: some rows will be rejected).
    private var hasResidualFilters = true
    private var segments: [Segment]
    private var rows: [(record: StoredRecord, key: QueryRules.SortKey)] = []
    private var asked = 0
    /// Rows the scans returned so far (tests check a page's cost with it).
    package private(set) var rowsVisited = 0
    /// When set, the backend tells `coverage(indexed:live:)` how many records of the type have an
    /// entry for this field and how many are live, before the first scan.
    package private(set) var coverageField: String?

    private enum Segment {
        case byName(after: String?)
        case byKey(field: String, lower: String?, upper: String?, descending: Bool, after: IndexPosition?)
        case withoutKey(field: String, after: String?)
    }

    package init(query: RecordQuery, limit: Int, continuationMarker: String?, zoneRowID: Int64) throws {
        self.query = query
        self.limit = limit
        self.zoneRowID = zoneRowID
        let after = try continuationMarker.map { try QueryRules.decode($0, zoneRowID: zoneRowID, sortCount: query.sorts.count) }
        self.after = after
        // An EQUALS filter on a field narrows any scan to one key.
        let equality = query.filters.lazy.compactMap { filter -> (String, String)? in
            guard filter.comparator == .equals, case .field(let name) = filter.field, let key = QueryIndex.key(filter.value) else { return nil }
            return (name, key)
        }.first
        let sorts = query.sorts
        if sorts.isEmpty || (sorts.count == 1 && sorts[0].field == .recordName && sorts[0].ascending) {
            ordered = true
            if let (field, key) = equality {
                segments = [.byKey(field: field, lower: key, upper: key, descending: false,
                                   after: after.map { IndexPosition(key: key, recordName: $0.recordName) })]
                hasResidualFilters = !QueryCursor.rangeAnswers(query.filters, field: field)
            } else {
                segments = [.byName(after: after?.recordName)]
                hasResidualFilters = !query.filters.isEmpty
            }
        } else if sorts.count == 1, case .field(let field) = sorts[0].field {
            ordered = true
            let ascending = sorts[0].ascending
            var lower: String?
            var upper: String?
            var excludesMissing = false
            for filter in query.filters where filter.field == .field(field) {
                let key = QueryIndex.key(filter.value)
                switch filter.comparator {
                case .equals:
                    if let key { lower = max(lower ?? key, key); upper = min(upper ?? key, key) }
                case .greaterThan, .greaterThanOrEquals:
                    if let key { lower = max(lower ?? key, key) }
                case .lessThan, .lessThanOrEquals:
                    if let key { upper = min(upper ?? key, key) }
                case .in, .beginsWith:
                    break
                case .notEquals, .notIn, .listContains:
                    continue
                }
                // Each of these needs a comparable value, which every record without an entry lacks.
                excludesMissing = true
            }
            var indexed = Segment.byKey(field: field, lower: lower, upper: upper, descending: !ascending, after: nil)
            var missing = Segment.withoutKey(field: field, after: nil)
            var planned: [Segment]
            if let after, after.values.count == 1 {
                if let value = after.values[0] {
                    indexed = .byKey(field: field, lower: lower, upper: upper, descending: !ascending,
                                     after: IndexPosition(key: QueryIndex.key(value), recordName: after.recordName))
                    planned = ascending ? [indexed, missing] : [indexed]
                } else {
                    missing = .withoutKey(field: field, after: after.recordName)
                    planned = ascending ? [missing] : [missing, indexed]
                }
            } else {
                planned = ascending ? [indexed, missing] : [missing, indexed]
            }
            if excludesMissing {
                planned.removeAll { if case .withoutKey = $0 { return true } else { return false } }
            } else if planned.contains(where: { if case .withoutKey = $0 { return true } else { return false } }) {
                coverageField = field
            }
            segments = planned
            hasResidualFilters = !QueryCursor.rangeAnswers(query.filters, field: field)
        } else {
            ordered = false
            if let (field, key) = equality {
                segments = [.byKey(field: field, lower: key, upper: key, descending: false, after: nil)]
            } else {
                segments = [.byName(after: nil)]
            }
        }
    }

    /// The fields whose index entries the planned scans read: each must be indexed in the zone
    /// (`query_fields`) before the scans run.
    package var indexedFields: Set<String> {
        Set(segments.compactMap { segment in
            switch segment {
            case .byName: return nil
            case .byKey(let field, _, _, _, _), .withoutKey(let field, _): return field
            }
        })
    }

    /// Whether the key range of a scan over `field` already answers every filter exactly.
    static func rangeAnswers(_ filters: [QueryFilter], field: String) -> Bool {
        filters.allSatisfy { filter in
            guard filter.field == .field(field), [.equals, .lessThanOrEquals, .greaterThanOrEquals].contains(filter.comparator),
                case let value? = ComparableValue(filter.value)
            else { return false }
            if case .text(let text) = value { return text.utf8.count < QueryIndex.maximumTextBytes }  // not truncated
            return true
        }
    }

    /// Every live record of the type has an entry for `coverageField` when the counts agree: then
    /// the scan of records without one is skipped (it would read the whole type to find none).
    package mutating func coverage(indexed: Int64, live: Int64) {
        guard indexed >= live else { return }
        segments.removeAll { if case .withoutKey = $0 { return true } else { return false } }
        coverageField = nil
    }

    /// The next read, or nil when the page is complete.
    package mutating func nextScan() -> QueryScan? {
        guard let segment = segments.first else { return nil }
        if ordered && rows.count > limit { return nil }
        let needed = limit + 1 - rows.count
        if !ordered {
            asked = 500
        } else if !hasResidualFilters {
            asked = needed
        } else {
            asked = min(max(needed * 2, 100), 500)  // some rows will not match
        }
        switch segment {
        case .byName(let after):
            return .byName(after: after, count: asked)
        case .byKey(let field, let lower, let upper, let descending, let after):
            return .byKey(field: field, lower: lower, upper: upper, descending: descending, after: after, count: asked)
        case .withoutKey(let field, let after):
            return .withoutKey(field: field, after: after, count: asked)
        }
    }

    /// The rows of the last scan, in its order; `key` is the index entry's key for `byKey` scans.
    package mutating func consume(_ scanned: [(record: StoredRecord, key: String?)]) throws {
        guard var segment = segments.first else { return }
        rowsVisited += scanned.count
        for (record, indexKey) in scanned {
            switch segment {
            case .byName: segment = .byName(after: record.recordName)
            case .withoutKey(let field, _): segment = .withoutKey(field: field, after: record.recordName)
            case .byKey(let field, let lower, let upper, let descending, _):
                segment = .byKey(field: field, lower: lower, upper: upper, descending: descending,
                                 after: IndexPosition(key: indexKey ?? "", recordName: record.recordName))
            }
            if ordered && rows.count > limit { continue }
            let fields = (try? JSONValue.parse(record.fieldsJSON).objectValue) ?? [:]
            let values = fields.mapValues { $0["value"] ?? .null }
            guard try query.filters.allSatisfy({ try QueryRules.matches($0, record: record, values: values) }) else { continue }
            let key = QueryRules.SortKey(
                values: query.sorts.map { QueryRules.value($0.field, record: record, values: values).flatMap(ComparableValue.init) },
                recordName: record.recordName)
            // Ordered scans start after the marker already; an unordered one sees every candidate.
            if !ordered, let after, !QueryRules.precedes(after, key, sorts: query.sorts) { continue }
            rows.append((record, key))
        }
        segments[0] = segment
        if scanned.count < asked { segments.removeFirst() }
        if !ordered && rows.count > 2 * (limit + 1) { keepBest() }
    }

    private mutating func keepBest() {
        let sorts = query.sorts
        rows.sort { QueryRules.precedes($0.key, $1.key, sorts: sorts) }
        rows.removeLast(max(0, rows.count - (limit + 1)))
    }

    package mutating func page() -> QueryPage {
        if !ordered { keepBest() }
        let page = rows.prefix(limit)
        let marker = rows.count > limit ? page.last.map { QueryRules.encode($0.key, zoneRowID: zoneRowID) } : nil
        var answer = QueryPage(records: page.map(\.record), continuationMarker: marker)
        answer.rowsVisited = rowsVisited
        return answer
    }
}
