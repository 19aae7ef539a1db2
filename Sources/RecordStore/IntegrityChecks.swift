/// The query index's invariants that `scorebookd check` verifies, as the same SQL on both
/// backends: the index holds live records only, and its counts match what it and the records
/// hold. Share records (`cloudkit.share`) are never indexed — a share is found through its zone,
/// never by a query — so the counts leave them out (`?1`).
package enum IntegrityChecks {
    package static let unindexedRecord = """
        SELECT q.zone_id, q.record_name FROM query_index q LEFT JOIN records r
            ON r.zone_id = q.zone_id AND r.name = q.record_name AND r.type = q.record_type AND r.deleted = 0
        WHERE r.name IS NULL LIMIT 20
        """

    package static func unindexedRecordProblem(zone: Int64, name: String) -> String {
        "zone \(zone): query index holds '\(name)', which is not live"
    }

    package static let miscountedType = """
        SELECT r.zone_id, r.type, COUNT(*), COALESCE(MAX(c.entries), 0) FROM records r LEFT JOIN query_counts c
            ON c.zone_id = r.zone_id AND c.record_type = r.type AND c.field = ''
        WHERE r.deleted = 0 AND r.type != ?1 GROUP BY r.zone_id, r.type HAVING COUNT(*) != COALESCE(MAX(c.entries), 0) LIMIT 20
        """

    package static func miscountedTypeProblem(zone: Int64, type: String, live: Int64, counted: Int64) -> String {
        "zone \(zone): \(live) live '\(type)' records, query counts say \(counted)"
    }

    package static let miscountedField = """
        SELECT q.zone_id, q.record_type, q.field, COUNT(*), COALESCE(MAX(c.entries), 0) FROM query_index q LEFT JOIN query_counts c
            ON c.zone_id = q.zone_id AND c.record_type = q.record_type AND c.field = q.field
        GROUP BY q.zone_id, q.record_type, q.field HAVING COUNT(*) != COALESCE(MAX(c.entries), 0) LIMIT 20
        """

    package static func miscountedFieldProblem(zone: Int64, type: String, field: String, entries: Int64, counted: Int64) -> String {
        "zone \(zone): \(entries) query index entries for '\(type).\(field)', counts say \(counted)"
    }
}
