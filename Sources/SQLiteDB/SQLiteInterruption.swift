import CSQLite
import Synchronization

/// Stops the statement a connection is running, from any thread, while its holder allows it.
///
/// Once the holder ends the window (`end`), the connection may go to another reader, whose
/// statements must not be stopped: an interrupt that comes after is dropped.
public final class SQLiteInterruption: @unchecked Sendable {
    // Unchecked: the handle is only passed to `sqlite3_interrupt`, which SQLite allows from any
    // thread while the connection is open, and only inside the window, under the lock.
    private let handle: OpaquePointer
    private let state = Mutex((open: true, interrupted: false))

    public init(_ connection: SQLiteConnection) {
        handle = connection.handle
    }

    /// Makes the running statement (and any started before the connection goes idle) fail with
    /// `SQLITE_INTERRUPT`; nothing once the window has ended.
    public func interrupt() {
        state.withLock { state in
            guard state.open else { return }
            state.interrupted = true
            sqlite3_interrupt(handle)
        }
    }

    /// Ends the window; returns whether an interrupt came in it.
    public func end() -> Bool {
        state.withLock { state in
            state.open = false
            return state.interrupted
        }
    }
}
