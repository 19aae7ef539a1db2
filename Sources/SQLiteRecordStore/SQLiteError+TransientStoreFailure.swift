import RecordStore
import SQLiteDB

/// SQLite's busy and disk errors are transient (`ServerError(storeFailure:)`).
extension SQLiteError: TransientStoreFailure {}
