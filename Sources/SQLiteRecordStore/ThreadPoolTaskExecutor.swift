import NIOPosix
import Synchronization

/// A task executor whose jobs run on the threads of a `NIOThreadPool`: a transaction script run
/// with this preference makes its blocking SQLite calls on the store's own threads, never on
/// Swift's cooperative pool. With one thread every job of the task runs on that thread.
package final class ThreadPoolTaskExecutor: TaskExecutor {
    private let pool: NIOThreadPool
    package let threads: Int
    private let shutDown = Atomic<Bool>(false)

    package init(threads: Int) {
        self.threads = threads
        self.pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    /// Runs blocking work that is not a task's job (a file read, a maintenance pass) on the same
    /// threads; work still queued when the pool shuts down never starts.
    package func runIfActive<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(body)
    }

    /// Ends the threads once the work queued has run (the first call; later ones return at once).
    package func shutdown() async {
        guard !shutDown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        try? await pool.shutdownGracefully()
    }

    /// Whether `shutdown` has ended the threads.
    package var isShutDown: Bool { shutDown.load(ordering: .acquiring) }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pool.submit { _ in job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
