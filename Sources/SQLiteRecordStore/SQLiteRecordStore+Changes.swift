import RecordModel
import RecordStore
import SQLiteDB

extension SQLiteRecordStore {
    package static let maximumResultsLimit = StoreLimits.maximumResultsLimit

    static func clampLimit(_ limit: Int, maximum: Int) -> Int { StoreLimits.clampLimit(limit, maximum: maximum) }

    static let recordColumns = """
        name, type, tag, deleted, fields, parent, created_at, created_by, created_device, modified_at, modified_by, modified_device
        """

    func storedRecord(_ row: SQLiteStatement, zoneID: ZoneID) -> StoredRecord {
        StoredRecord(recordName: row.text(0), recordType: row.text(1), changeTag: row.text(2), fieldsJSON: row.blob(4),
                     parent: row.optionalText(5),
                     created: ChangeStamp(timestamp: row.int64(6), userRecordName: row.text(7), deviceID: row.optionalText(8)),
                     modified: ChangeStamp(timestamp: row.int64(9), userRecordName: row.text(10), deviceID: row.optionalText(11)),
                     zoneID: zoneID)
    }

    /// Reads one row of the schema: throws when the file cannot be read.
    package func checkReadable() throws {
        _ = try database.readSync { try $0.scalarInt("SELECT COUNT(*) FROM meta") }
    }
}
