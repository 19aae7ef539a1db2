import RecordModel
import SQLiteDB

/// One value of an exported row: every column of the store is an integer, text, or NULL (JSON
/// blobs are exported as their UTF-8 text).
package enum ExportedValue: Sendable {
    case int(Int64)
    case text(String)
    case null
}

/// A table of the store, row by row, for `scorebookd migrate` (SQLite → PostgreSQL).
package struct ExportedTable: Sendable {
    package var name: String
    package var columns: [String]
    package var rows: [[ExportedValue]]
}

extension SQLiteRecordStore {
    /// The tables `migrate` copies, with their columns in the order both schemas share.
    package static let exportedTables: [(name: String, columns: [String])] = [
        ("users", ["id", "name", "record_name", "created_at", "email"]),
        ("auth_tokens", ["token_hash", "user_id", "created_at", "revoked"]),
        ("api_tokens", ["token_hash", "created_at"]),
        ("server_keys", ["key_id", "public_key", "user_id", "name", "created_at"]),
        ("databases", ["id", "user_id", "container", "environment", "db_seq", "purged_seq"]),
        ("zones", ["id", "database_id", "name", "seq", "db_seq", "purged_seq", "deleted", "deleted_at"]),
        ("records", ["zone_id", "name", "type", "tag", "seq", "deleted", "fields", "parent", "created_at", "created_by",
                     "created_device", "modified_at", "modified_by", "modified_device"]),
        ("refs", ["zone_id", "target", "source", "action"]),
        ("dev_schema", ["container", "record_type", "field", "field_type"]),
        ("subscriptions", ["database_id", "subscription_id", "definition"]),
        ("push_tokens", ["token", "database_id", "user_id", "apns_environment", "start_cursor", "created_at"]),
        ("notifications", ["database_id", "id", "created_at", "payload"]),
        ("shares", ["zone_id", "short_guid", "owner_user_id"]),
        ("share_participants", ["zone_id", "participant_id", "user_id", "email", "permission", "status", "database_id"]),
        ("query_index", ["zone_id", "record_type", "field", "sort_key", "record_name"]),
        ("query_counts", ["zone_id", "record_type", "field", "entries"]),
        ("query_fields", ["zone_id", "record_type", "field"]),
        // The assets' bookkeeping; their bytes follow from the files (`importAssetFile`).
        ("asset_blobs", ["scope", "checksum", "size", "created_at", "attached", "unreferenced_since"]),
        ("asset_uploads", ["upload_id", "user_id", "scope", "binding", "created_at", "claimed_at", "checksum", "size", "receipt",
                           "uploaded_at", "attached_at"]),
    ]

    static let integerColumns: Set<String> = [
        "id", "user_id", "created_at", "revoked", "db_seq", "purged_seq", "database_id", "seq", "deleted", "deleted_at", "zone_id",
        "modified_at", "action", "start_cursor", "owner_user_id", "entries", "size", "attached", "unreferenced_since", "claimed_at",
        "uploaded_at", "attached_at",
    ]
    static let jsonBlobColumns: Set<String> = ["fields", "definition", "payload"]

    /// The store's identity (sync tokens carry it; `migrate` keeps it so tokens stay valid).
    package var exportedStoreID: String { storeID }

    /// Every exported table, read in one snapshot.
    package func exportTables() throws -> [ExportedTable] {
        try database.readSync { connection in
            try connection.readTransaction {
                try SQLiteRecordStore.exportedTables.map { table in
                    let sql = "SELECT \(table.columns.joined(separator: ", ")) FROM \(table.name)"
                    let rows = try connection.map(sql) { row in
                        table.columns.enumerated().map { index, name -> ExportedValue in
                            let column = Int32(index)
                            if row.isNull(column) { return .null }
                            if SQLiteRecordStore.integerColumns.contains(name) { return .int(row.int64(column)) }
                            if SQLiteRecordStore.jsonBlobColumns.contains(name) { return .text(String(decoding: row.blob(column), as: UTF8.self)) }
                            return .text(row.text(column))
                        }
                    }
                    return ExportedTable(name: table.name, columns: table.columns, rows: rows)
                }
            }
        }
    }
}
