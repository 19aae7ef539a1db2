import NIOCore
import NIOPosix
import Synchronization

/// The deadlines of the store transactions in flight, watched by one event-loop timer.
///
/// A timer of its own for each transaction, scheduled on an event loop and cancelled there,
/// woke that loop's thread twice a request; on a small page those two wake-ups cost more than
/// reading the records. Here a transaction adds its deadline to a table under a lock and takes it
/// out when it ends, and one timer, set for the earliest deadline, fires the due ones and sets
/// itself for the next. Under steady load it fires about once per deadline's length.
package final class TransactionDeadlines: Sendable {
    package static let shared = TransactionDeadlines(loop: MultiThreadedEventLoopGroup.singleton.next())

    private struct Entry {
        var deadline: NIODeadline
        var fire: @Sendable () -> Void
    }

    private struct State {
        var lastID: UInt64 = 0
        var entries: [UInt64: Entry] = [:]
        /// When the timer relied on fires (nil: none is set), and which one it is: a timer set
        /// for an earlier deadline supersedes it, and the superseded one, when it fires, only
        /// fires what is due.
        var timerDeadline: NIODeadline?
        var timerGeneration: UInt64 = 0
    }

    private let loop: any EventLoop
    private let state = Mutex(State())

    package init(loop: any EventLoop) {
        self.loop = loop
    }

    /// Runs `fire` on the timer's event loop at `deadline`, unless `remove`d first.
    package func add(at deadline: NIODeadline, _ fire: @escaping @Sendable () -> Void) -> UInt64 {
        let (id, timer) = state.withLock { state -> (UInt64, UInt64?) in
            state.lastID &+= 1
            state.entries[state.lastID] = Entry(deadline: deadline, fire: fire)
            if let set = state.timerDeadline, set <= deadline { return (state.lastID, nil) }
            state.timerDeadline = deadline
            state.timerGeneration &+= 1
            return (state.lastID, state.timerGeneration)
        }
        if let timer { loop.scheduleTask(deadline: deadline) { self.timerFired(generation: timer) } }
        return id
    }

    /// Forgets the deadline of a transaction that ended.
    package func remove(_ id: UInt64) {
        _ = state.withLock { $0.entries.removeValue(forKey: id) }
    }

    /// How many deadlines are watched (tests).
    package var count: Int { state.withLock { $0.entries.count } }

    private func timerFired(generation: UInt64) {
        let now = NIODeadline.now()
        let (due, next) = state.withLock { state -> ([@Sendable () -> Void], (NIODeadline, UInt64)?) in
            var dueIDs: [UInt64] = []
            var earliest: NIODeadline?
            for (id, entry) in state.entries {
                if entry.deadline <= now {
                    dueIDs.append(id)
                } else if earliest.map({ entry.deadline < $0 }) ?? true {
                    earliest = entry.deadline
                }
            }
            let due = dueIDs.compactMap { state.entries.removeValue(forKey: $0)?.fire }
            guard generation == state.timerGeneration else { return (due, nil) }
            state.timerDeadline = earliest
            guard let earliest else { return (due, nil) }
            state.timerGeneration &+= 1
            return (due, (earliest, state.timerGeneration))
        }
        if let (deadline, timer) = next { loop.scheduleTask(deadline: deadline) { self.timerFired(generation: timer) } }
        for fire in due { fire() }
    }
}
