import RecordStore

// Users and credentials, subscriptions and channels, the assets' bookkeeping and the check are
// the engine's; the assets' bytes are chunk rows.
extension PostgresRecordStore: EngineUserStorage, EngineSubscriptionStorage, EngineAssetStorage {
    package var assetBytes: any AssetByteStore { PostgresAssetChunks() }
}
