// SyncEngine
