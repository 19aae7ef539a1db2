import Foundation
import Synchronization

/// A database file shared by one writer connection and a small pool of reader connections.
/// In WAL mode readers never wait for the writer and see only committed transactions; all writes
/// go through the single writer, so commits are totally ordered.
///
/// Unchecked: a connection is a non-Sendable handle, and the compiler cannot see that the writer
/// is used only while `writerLock` is held and a reader only by the one caller that checked it
/// out of `idleReaders` (a `Mutex` cannot hand a non-Sendable value out of its lock).
public final class SQLiteDatabase: @unchecked Sendable {
    public let path: String
    private let writer: SQLiteConnection
    /// An `NSLock`, not a `Mutex`: the group-commit writer takes it in one call and gives it back
    /// in another (`lockWriter`/`unlockWriter`), which a `Mutex`'s scoped `withLock` cannot do.
    private let writerLock = NSLock()
    private let readerLock = Mutex(())
    private var idleReaders: [SQLiteConnection] = []
    private let maximumIdleReaders: Int
    private let synchronous: SQLiteConnection.Synchronous

    public init(path: String, synchronous: SQLiteConnection.Synchronous = .full, maximumIdleReaders: Int = 8) throws {
        self.path = path
        self.synchronous = synchronous
        self.maximumIdleReaders = maximumIdleReaders
        self.writer = try SQLiteConnection(path: path, synchronous: synchronous)
    }

    /// How long a write waits for a lock held by another process (default 10 s).
    public func setWriterBusyTimeout(milliseconds: Int32) {
        writeSync { $0.setBusyTimeout(milliseconds: milliseconds) }
    }

    /// Runs `body` with the writer connection, blocking the calling thread until it is free.
    public func writeSync<T>(_ body: (SQLiteConnection) throws -> T) rethrows -> T {
        writerLock.lock()
        defer { writerLock.unlock() }
        return try body(writer)
    }

    /// Runs `body` with a reader connection.
    public func readSync<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        let connection = try checkOutReader()
        defer { checkIn(connection) }
        return try body(connection)
    }

    /// Takes the writer connection until `unlockWriter` (the store's group-commit writer holds it
    /// for a whole group, on its one thread).
    public func lockWriter() -> SQLiteConnection {
        writerLock.lock()
        return writer
    }

    public func unlockWriter() { writerLock.unlock() }

    /// A reader connection of the caller's own until it gives it back with `checkIn`.
    public func checkOutReader() throws -> SQLiteConnection {
        if let connection = readerLock.withLock({ _ in idleReaders.popLast() }) { return connection }
        return try SQLiteConnection(path: path, synchronous: synchronous)
    }

    public func checkIn(_ connection: SQLiteConnection) {
        readerLock.withLock { _ in
            if idleReaders.count < maximumIdleReaders { idleReaders.append(connection) }
        }
    }

    /// Checkpoints the WAL into the main file (on shutdown).
    public func checkpoint() {
        writeSync { try? $0.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
    }
}
