import Dispatch
import Foundation

/// A database file shared by one writer connection and a small pool of reader connections.
/// In WAL mode readers never wait for the writer and see only committed transactions; all writes
/// go through the single writer, so commits are totally ordered.
public final class SQLiteDatabase: @unchecked Sendable {
    public let path: String
    private let writer: SQLiteConnection
    private let writerLock = NSLock()
    private var idleReaders: [SQLiteConnection] = []
    private let readerLock = NSLock()
    private let maximumIdleReaders: Int
    private let synchronous: SQLiteConnection.Synchronous
    private let writeQueue = DispatchQueue(label: "sqlite.writer")
    private let readQueue = DispatchQueue(label: "sqlite.readers", attributes: .concurrent)

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

    /// The same as `writeSync`, off the caller's thread (for async servers).
    public func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            writeQueue.async {
                continuation.resume(with: Result { try self.writeSync(body) })
            }
        }
    }

    /// The same as `readSync`, off the caller's thread.
    public func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            readQueue.async {
                continuation.resume(with: Result { try self.readSync(body) })
            }
        }
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
        readerLock.lock()
        if let connection = idleReaders.popLast() {
            readerLock.unlock()
            return connection
        }
        readerLock.unlock()
        return try SQLiteConnection(path: path, synchronous: synchronous)
    }

    public func checkIn(_ connection: SQLiteConnection) {
        readerLock.lock()
        defer { readerLock.unlock() }
        if idleReaders.count < maximumIdleReaders { idleReaders.append(connection) }
    }

    /// Checkpoints the WAL into the main file (on shutdown).
    public func checkpoint() {
        writeSync { try? $0.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
    }
}
