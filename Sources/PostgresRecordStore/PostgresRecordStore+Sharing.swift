import PostgresNIO
import RecordModel
import RecordStore

// Zones, records, the feeds, sharing, notifications and queries are the store engine's
// (`EngineStorage`, `EngineQueryStorage`).
extension PostgresRecordStore: EngineStorage, EngineQueryStorage {}
