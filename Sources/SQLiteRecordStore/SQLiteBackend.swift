import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOPosix
import RecordModel
import RecordStore

/// SQLite under the store engine (`SQLiteStorage`). Writes, and most reads, are the engine's (the
/// group-commit writer's one thread, the driver's reader threads); the few reads still made by
/// `SQLiteRecordStore` itself run here on the readers' threads, so a blocked SQLite call never
/// holds a thread of Swift's cooperative pool.
package final class SQLiteBackend: StoreBackend {
    package let store: SQLiteRecordStore
    /// The driver's reader threads: maintenance and asset reads block on the same eight threads
    /// as the engine's reads, not on a pool of their own.
    private var readPool: ThreadPoolTaskExecutor { SQLiteStoreDriver.readExecutor }

    /// The request deadline every store call runs under.
    private let runner: StoreTransactionRunner

    /// The transaction scripts written once for both backends, on this store's database.
    package let engine: StoreEngine
    /// The engine's driver: its writer is this store's to stop.
    private let driver: SQLiteStoreDriver

    package init(_ store: SQLiteRecordStore, requestDeadline: Duration = .seconds(10)) {
        self.store = store
        self.runner = StoreTransactionRunner(deadline: requestDeadline)
        self.driver = SQLiteStoreDriver(database: store.database, requestDeadline: requestDeadline)
        self.engine = StoreEngine(driver: driver,
                                  storeID: store.storeID, clock: store.clock, productionSchema: store.productionSchema,
                                  subscriptionCache: store.subscriptionCache)
    }

    /// Runs `body` on a pool thread under the request deadline (`StoreTransactionRunner`). Work
    /// still queued when the deadline passes never starts; work already running finishes on its
    /// thread (all or nothing, as every store transaction), its caller long answered.
    func offload<T: Sendable>(_ body: @escaping @Sendable (SQLiteRecordStore) throws -> T) async throws -> T {
        let store = self.store
        let pool = readPool
        // The pool's threads are outside the task: the request's share-link base goes along.
        let linkBase = ShareRules.requestLinkBase
        return try await runner.run { abandonment in
            try await pool.runIfActive {
                if abandonment.isAbandoned { throw StoreTransactionRunner.timedOut("the store did not answer in time") }
                return try ShareRules.$requestLinkBase.withValue(linkBase) { try body(store) }
            }
        }
    }

    /// Whether the store answers a read.
    package func checkReady() async throws { try await offload { try $0.checkReadable() } }

    /// One process writes the file: its own commits are all there are.
    package func setCommitObserver(_ observer: @escaping @Sendable (Set<Int64>) -> Void) {
        engine.setCommitObserver(observer)
    }

    /// The store is embedded: one daemon serves it.
    package func liveDaemonCount(heartbeatFrom daemonID: String) async throws -> Int { 1 }

    /// Commits what is queued, stops the writer's thread and checkpoints: nothing the store
    /// started runs after it (the reader threads are the process's, shared by every store).
    package func close() async {
        await driver.writer.stop()
        store.close()
    }

    // MARK: Assets

    package var tokenUses: TokenUseRecorder { store.tokenUses }

    /// The assets' bytes are files beside the database.
    package var assetBytes: any AssetByteStore { store.assetFiles }

    package func assetStagingDirectory() throws -> String { try store.assetStagingDirectory() }

    /// Pieces small enough for the heap's free lists to reuse (see the allocator settings in
    /// `scorebookd`), large enough that a piece is one read and one write: downloads ran
    /// 1.2-1.5 GB/s on loopback here with 64 KB pieces and those settings, 0.8-1.2 GB/s with
    /// 256 KB pieces and the old ones.
    package var assetPieceBytes: Int { 64 * 1024 }

    /// One piece of the file, read on the read pool.
    package func readAssetBlob(_ blob: AssetBlob, offset: Int64, maximumLength: Int) async throws -> ByteBuffer {
        let path = store.assetFilePath(scopeKey: blob.scopeKey, checksum: blob.checksum)
        let count = Int(min(Int64(maximumLength), blob.size - offset))
        guard count > 0 else { return ByteBuffer() }
        return try await readPool.runIfActive {
            // pread straight into the buffer the response will send: no Data in between.
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw AssetLimits.missingBytes() }
            defer { Glibc.close(fd) }
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            var filled = 0
            while filled < count {
                let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - filled) { target in
                    max(0, pread(fd, target.baseAddress, count - filled, off_t(offset) + off_t(filled)))
                }
                if read == 0 { throw AssetLimits.missingBytes() }  // shorter than recorded, as a short chunk row on PostgreSQL
                filled += read
            }
            return buffer
        }
    }
}
