import Foundation
import Synchronization

/// State shared with background threads that a test waits on, with a deadline, until it is what
/// the test expects (a pipe's first line, a background call's result).
public final class WaitableBox<State: Sendable>: Sendable {
    /// Only for waking waiters: a change takes it around the update, a waiter around its check, so
    /// no wake-up is missed between the two.
    private let condition = NSCondition()
    private let state: Mutex<State>

    public init(_ initial: State) { state = Mutex(initial) }

    public var value: State { state.withLock { $0 } }

    /// Changes the state and wakes every waiter.
    @discardableResult
    public func update<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return state.withLock { body(&$0) }
    }

    /// The state once `isReady` holds for it, or at the deadline, whichever comes first.
    public func wait(until deadline: Date, for isReady: (State) -> Bool) -> State {
        condition.lock()
        defer { condition.unlock() }
        while true {
            let current = value
            if isReady(current) || !condition.wait(until: deadline) { return value }
        }
    }
}
