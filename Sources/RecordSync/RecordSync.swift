// The layers below the typed API, re-exported: an app names `Record`, `FieldValue`, `ZoneID`
// (RecordModel) in its entities, can bring an `HTTPTransport` (RecordClient), and reads
// `SyncSummary`, `SyncProgress` and `ConflictDetail` (SyncEngine) from a sync, with one
// `import RecordSync`.
@_exported import RecordClient
@_exported import RecordModel
@_exported import SyncEngine
