import Dispatch
import Foundation
import SQLiteDB
import Synchronization

/// Copies a store's write-ahead log into its database file on a connection and thread of its
/// own, while fetched pages go on being committed: SQLite otherwise does it inside the commit
/// that fills the log (every 4 MB), and on a first sync of a big book that was a third of the
/// time spent writing. A passive checkpoint never blocks the writer, and a killed process loses
/// nothing: committed pages are in the log until copied.
final class WALCheckpointer: Sendable {
    private let path: String
    private let queue = DispatchQueue(label: "scorebook.wal-checkpoint")
    private let running = Mutex(false)
    /// Opened on first use, and used only on `queue`.
    private let connection = Mutex<SQLiteConnection?>(nil)

    init(path: String) { self.path = path }

    /// Starts a checkpoint unless one is running.
    func request() {
        let starts = running.withLock { running in
            defer { running = true }
            return !running
        }
        guard starts else { return }
        queue.async { [self] in
            // Best effort: a checkpoint that fails leaves the log to the next one, or to SQLite's own.
            connection.withLock { connection in
                if connection == nil { connection = try? SQLiteConnection(path: path, synchronous: .normal) }
                try? connection?.execute("PRAGMA wal_checkpoint(PASSIVE)")
            }
            running.withLock { $0 = false }
        }
    }

    /// Waits for a running checkpoint to end.
    func wait() {
        queue.sync {}
    }
}
