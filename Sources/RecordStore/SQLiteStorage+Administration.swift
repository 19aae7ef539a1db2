import RecordModel

// Users and credentials are the engine's (`EngineUserStorage`); `scorebookd check` on the embedded store.
extension SQLiteStorage: EngineUserStorage {
    package var tokenUses: TokenUseRecorder { store.tokenUses }

    package func checkIntegrity() async throws -> [String] { try await offload { try $0.checkIntegrity() } }
}
