import RecordStore

// Users and their credentials: the engine's scripts on this database.
extension PostgresRecordStore: EngineUserStorage {}
