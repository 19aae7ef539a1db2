import Dispatch
import Foundation
import SQLiteDB

/// Copies a store's write-ahead log into its database file on a connection and thread of its
/// own, while fetched pages go on being committed: SQLite otherwise does it inside the commit
/// that fills the log (every 4 MB), and on a first sync of a big book that was a third of the
/// time spent writing. A passive checkpoint never blocks the writer, and a killed process loses
/// nothing: committed pages are in the log until copied.
final class WALCheckpointer: @unchecked Sendable {
    private let path: String
    private let queue = DispatchQueue(label: "scorebook.wal-checkpoint")
    /// Guards `running`; `connection` is used only on `queue`.
    private let lock = NSLock()
    private var running = false
    private var connection: SQLiteConnection?

    init(path: String) { self.path = path }

    /// Starts a checkpoint unless one is running.
    func request() {
        lock.lock()
        defer { lock.unlock() }
        guard !running else { return }
        running = true
        queue.async { [self] in
            // Best effort: a checkpoint that fails leaves the log to the next one, or to SQLite's own.
            if connection == nil { connection = try? SQLiteConnection(path: path, synchronous: .normal) }
            try? connection?.execute("PRAGMA wal_checkpoint(PASSIVE)")
            lock.lock()
            running = false
            lock.unlock()
        }
    }

    /// Waits for a running checkpoint to end.
    func wait() {
        queue.sync {}
    }
}
