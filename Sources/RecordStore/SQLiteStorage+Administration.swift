import RecordModel

// Users and credentials, subscriptions and channels, the assets' bookkeeping and `scorebookd check`
// are the engine's; the assets' bytes are files beside the database.
extension SQLiteStorage: EngineUserStorage, EngineSubscriptionStorage, EngineAssetStorage {
    package var tokenUses: TokenUseRecorder { store.tokenUses }
    package var assetBytes: any AssetByteStore { store.assetFiles }
}
