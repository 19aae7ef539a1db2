import Synchronization

/// A value shared between a test's thread and the threads it starts.
public final class LockedBox<Value: Sendable>: Sendable {
    private let stored: Mutex<Value>

    public init(_ value: Value) { stored = Mutex(value) }

    public var value: Value { stored.withLock { $0 } }

    public func set(_ value: Value) { stored.withLock { $0 = value } }

    /// Reads and changes the value in one step under the lock (a counter's increment, an append).
    @discardableResult
    public func withLock<Result: Sendable, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try stored.withLock { value throws(Failure) -> Result in try body(&value) }
    }
}
