import RecordStore

/// The SQLite store: the engine's `RecordStorage` on one database file (`SQLiteBackend`).
package typealias SQLiteStorage = EngineStore<SQLiteBackend>

extension EngineStore where Backend == SQLiteBackend {
    /// The store on `store`'s database; every call runs under `requestDeadline`.
    package convenience init(_ store: SQLiteRecordStore, requestDeadline: Duration = .seconds(10)) {
        self.init(SQLiteBackend(store, requestDeadline: requestDeadline))
    }

    /// The synchronous store underneath (backups, maintenance, the tests' own reads).
    package var store: SQLiteRecordStore { backend.store }
}
