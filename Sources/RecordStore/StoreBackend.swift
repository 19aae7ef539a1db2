import NIOCore

/// What a database adds to the engine's scripts to make a whole store (`EngineStore`): the
/// engine on its driver, where the assets' bytes live and how a download reads them, what
/// "ready" means, the commits of other processes, and closing. SQLite and PostgreSQL each
/// implement it in their own module.
package protocol StoreBackend: AnyObject, Sendable {
    /// The transaction scripts on this backend's database.
    var engine: StoreEngine { get }
    /// Decides when a token's last use is written.
    var tokenUses: TokenUseRecorder { get }

    /// Where this backend keeps the assets' bytes.
    var assetBytes: any AssetByteStore { get }
    /// How much of an asset a download reads at a time (`RecordStorage.assetPieceBytes`).
    var assetPieceBytes: Int { get }
    /// Where the daemon writes an upload while it arrives.
    func assetStagingDirectory() throws -> String
    /// Up to `maximumLength` bytes of `blob` from `offset`.
    func readAssetBlob(_ blob: AssetBlob, offset: Int64, maximumLength: Int) async throws -> ByteBuffer

    /// Answers when the database can serve a read, else throws.
    func checkReady() async throws
    /// Sets the callback told which databases each commit changed, this process's and, where
    /// several processes write, the others' (`RecordStorage.setCommitObserver`).
    func setCommitObserver(_ observer: @escaping @Sendable (Set<Int64>) -> Void)
    /// Records that the daemon `daemonID` is alive and returns how many serve this database.
    func liveDaemonCount(heartbeatFrom daemonID: String) async throws -> Int
    /// Ends what the backend started (threads, connections, listeners) once the work queued is done.
    func close() async
}
