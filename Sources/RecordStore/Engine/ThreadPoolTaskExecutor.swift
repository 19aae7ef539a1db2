import NIOPosix

/// A task executor whose jobs run on the threads of a `NIOThreadPool`: a transaction script run
/// with this preference makes its blocking SQLite calls on the store's own threads, never on
/// Swift's cooperative pool. With one thread every job of the task runs on that thread.
package final class ThreadPoolTaskExecutor: TaskExecutor {
    private let pool: NIOThreadPool
    package let threads: Int

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

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pool.submit { _ in job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
