import RecordModel

// `scorebookd check` on the embedded store.
extension SQLiteStorage {
    package func checkIntegrity() async throws -> [String] { try await offload { try $0.checkIntegrity() } }
}
