import Foundation

/// A value shared between a test's thread and the threads it starts.
public final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    public init(_ value: Value) { stored = value }

    public var value: Value { lock.withLock { stored } }

    public func set(_ value: Value) { lock.withLock { stored = value } }
}
