import Foundation
import PostgresNIO
import RecordModel
import RecordStore

// `scorebookd check --database URL`.
extension PostgresRecordStore {
    /// Checks the store's invariants; returns the problems found (empty when sound).
    package func checkIntegrity() async throws -> [String] {
        try await read { connection in
            var problems: [String] = []
            for row in try await connection.query(
                """
                SELECT r.zone_id, r.source, r.target FROM refs r
                LEFT JOIN records t ON t.zone_id = r.zone_id AND t.name = r.target AND t.deleted = 0
                WHERE t.name IS NULL LIMIT 20
                """, logger: self.logger
            ).collect() {
                let (zone, source, target) = try row.decode((Int64, String, String).self)
                problems.append("zone \(zone): '\(source)' references missing '\(target)'")
            }
            for row in try await connection.query(
                "SELECT z.id, z.seq, MAX(r.seq) FROM zones z JOIN records r ON r.zone_id = z.id GROUP BY z.id HAVING MAX(r.seq) > z.seq",
                logger: self.logger
            ).collect() {
                let (zone, seq, maximum) = try row.decode((Int64, Int64, Int64).self)
                problems.append("zone \(zone): sequence \(seq) is behind its records (\(maximum))")
            }
            for row in try await connection.query(PostgresQuery(unsafeSQL: IntegrityChecks.unindexedRecord), logger: self.logger).collect() {
                let (zone, name) = try row.decode((Int64, String).self)
                problems.append(IntegrityChecks.unindexedRecordProblem(zone: zone, name: name))
            }
            for row in try await connection.query(PostgresRecordStore.sharedStatement(IntegrityChecks.miscountedType, ShareRules.recordType),
                                                  logger: self.logger).collect() {
                let (zone, type, live, counted) = try row.decode((Int64, String, Int64, Int64).self)
                problems.append(IntegrityChecks.miscountedTypeProblem(zone: zone, type: type, live: live, counted: counted))
            }
            for row in try await connection.query(PostgresQuery(unsafeSQL: IntegrityChecks.miscountedField), logger: self.logger).collect() {
                let (zone, type, field, entries, counted) = try row.decode((Int64, String, String, Int64, Int64).self)
                problems.append(IntegrityChecks.miscountedFieldProblem(zone: zone, type: type, field: field, entries: entries, counted: counted))
            }
            problems += try await self.assetProblems(connection)
            return problems
        }
    }

    /// One of the statements written for both backends, whose single argument is `?1`.
    static func sharedStatement(_ sql: String, _ argument: String) -> PostgresQuery {
        var binds = PostgresBindings()
        binds.append(argument)
        return PostgresQuery(unsafeSQL: sql.replacingOccurrences(of: "?1", with: "$1"), binds: binds)
    }
}
