import CThreadPlacement
import Dispatch
import Foundation
import Synchronization

/// One thread for the work a SQLite write thread hands off and goes on (`PlansAhead`, the answer
/// written during the commit in `SQLiteStorage`), kept off the CPU of the write thread that hands
/// it over. Woken from a write thread, a pooled thread was often put on the writer's own CPU and
/// run there first while the other CPU idled: 54 % of the planner's wake-ups in `--records 200000
/// batch-write-daemon` when it ran on libdispatch's global queue, the writer then off its CPU
/// ~450 µs a batch, so half the batches gained nothing. The jobs never wait for the write thread,
/// so one thread runs them one after another.
final class WriteHelperThread: @unchecked Sendable {
    static let shared = WriteHelperThread()
    /// Whether this process may run on more than one CPU (with one, work handed over only takes
    /// turns with the write thread, except while the write thread waits for the disk).
    static let hasAnotherCPU = scorebook_allowed_cpu_count() > 1

    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var thread: pthread_t?
        /// The CPU the thread is kept off now (an affinity change is a system call: made only
        /// when the write thread has moved).
        var excludedCPU: Int32 = -1
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    private init() {
        let thread = Thread { [self] in loop() }
        thread.name = "scorebook.write-helper"
        thread.start()
    }

    /// Runs `job` on the helper thread, kept off the calling thread's CPU.
    func run(_ job: @escaping @Sendable () -> Void) {
        let cpu = scorebook_current_cpu()
        let moveOff: pthread_t? = state.withLock { state in
            state.jobs.append(job)
            guard let thread = state.thread, state.excludedCPU != cpu else { return nil }
            state.excludedCPU = cpu
            return thread
        }
        if let moveOff { _ = scorebook_keep_thread_off_cpu(moveOff, cpu) }
        wake.signal()
    }

    private func loop() {
        state.withLock { $0.thread = pthread_self() }
        while true {
            wake.wait()
            let job = state.withLock { $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }
            job?()
        }
    }
}
