import RecordModel

/// `records/lookup`: the named live records of a zone, in the order asked, read in one snapshot
/// by one statement however many names.
extension StoreEngine {
    package func lookupRecords(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String]) async throws
        -> [Result<StoredRecord, ServerError>]
    {
        try await readLookup(scope, zone: zone, recordNames: recordNames, start: { [Result<StoredRecord, ServerError>]() }) {
            results, name, row, zoneID, shareJSON in
            guard let row else { return results.append(.failure(Self.notFound(name))) }
            results.append(.success(Self.storedRecord(row, zoneID: zoneID, shareJSON: shareJSON)))
        } finish: { $0 }
    }

    /// `lookupRecords` as JSON, written while the rows are read (see `zoneChangesJSON`).
    package func lookupRecordsJSON(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String], options: RecordJSONOptions) async throws
        -> SerializedRecords
    {
        let count = recordNames.count
        return try await readLookup(scope, zone: zone, recordNames: recordNames, start: { RecordJSONWriter(rows: count, options: options) }) {
            writer, name, row, zoneID, shareJSON in
            guard let row else { return writer.append(Self.notFound(name)) }
            Self.write(row, into: &writer, zoneID: zoneID, shareJSON: shareJSON)
        } finish: { $0.finish() }
    }

    /// `recordColumns` of the table named `r`.
    static let recordColumnsOfR = recordColumns.split(separator: ",").map { "r." + $0.filter { !$0.isWhitespace } }.joined(separator: ", ")

    static func notFound(_ name: String) -> ServerError {
        ServerError(.notFound, "record '\(name)' does not exist").with(recordName: name)
    }

    /// Reads each named live record in the order asked: `add` is handed every name asked with its
    /// row of `recordColumns`, or nil for a name not found, and the zone's share members where
    /// the share record was asked for.
    private func readLookup<Builder, Records: Sendable>(
        _ scope: DatabaseScope, zone: ZoneID, recordNames: [String],
        start: @escaping @Sendable () -> Builder,
        add: @escaping @Sendable (inout Builder, String, (any StoreCursor)?, ZoneID, [UInt8]?) -> Void,
        finish: @escaping @Sendable (consuming Builder) -> Records
    ) async throws -> Records {
        guard recordNames.count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) records per lookup")
        }
        let privateDatabaseID = scope.kind != .shared ? try await databaseID(scope) : 0
        let caller = scope.userRecordName
        let names = JSONArgument.array(recordNames)
        let asksForShare = recordNames.contains(ShareRules.recordName)
        return try await driver.read { connection in
            let addressed = try await self.addressedZone(scope, zone, privateDatabaseID: privateDatabaseID, connection)
            let shareJSON = asksForShare ? try await self.shareJSON(zoneRowID: addressed.row.id, caller: caller, connection) : nil
            var builder = start()
            try await connection.forEachRow(
                """
                SELECT \(Self.recordColumnsOfR), asked.value \(connection.dialect.recordsNamed(left: true, liveOnly: true))
                ORDER BY asked.position
                """, [.text(names), .int(addressed.row.id)]
            ) { row in
                add(&builder, row.text(12), row.isNull(0) ? nil : row, addressed.zoneID, shareJSON)
            }
            return finish(builder)
        }
    }
}
