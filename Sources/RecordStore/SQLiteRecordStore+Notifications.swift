import RecordModel
import SQLiteDB

extension SQLiteRecordStore {
    /// Writes the notifications a modify transaction fires, inside that transaction.
    func recordNotifications(for transaction: ModifyTransaction, databaseID: Int64, _ connection: SQLiteConnection) throws {
    }
}
