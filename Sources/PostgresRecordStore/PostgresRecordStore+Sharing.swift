import PostgresNIO
import RecordModel
import RecordStore

// Records modify, sharing and queries are the store engine's (`EngineWriteStorage`,
// `EngineQueryStorage`).
extension PostgresRecordStore: EngineWriteStorage, EngineQueryStorage {}
