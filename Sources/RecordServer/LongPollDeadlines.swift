import NIOCore
import Synchronization

/// A parked long-poll as its deadline knows it.
protocol LongPollDeadlineTarget: AnyObject, Sendable {
    var eventLoop: any EventLoop { get }
    /// On `eventLoop`: the poll parked as `parking` reached its deadline.
    func pollTimedOut(parking: UInt64)
}

/// The deadlines of the parked long-polls, one `LoopDeadlines` per event loop: one timer for all
/// of a loop's polls instead of a scheduled task per poll (cancelling one searches the loop's
/// whole timer heap). One per server, shared by its connections.
final class LongPollDeadlines: Sendable {
    private let byLoop = Mutex<[ObjectIdentifier: NIOLoopBound<LoopDeadlines>]>([:])

    /// On `connection`'s loop: `connection.pollTimedOut(parking:)` is called there once `deadline`
    /// has passed (within a tick).
    func add(_ connection: any LongPollDeadlineTarget, parking: UInt64, deadline: NIODeadline) {
        let loop = connection.eventLoop
        let deadlines = byLoop.withLock { byLoop in
            if let known = byLoop[ObjectIdentifier(loop)] { return known }
            let made = NIOLoopBound(LoopDeadlines(loop: loop), eventLoop: loop)
            byLoop[ObjectIdentifier(loop)] = made
            return made
        }
        deadlines.value.add(connection, parking: parking, deadline: deadline)
    }
}

/// The deadlines of the long-polls parked on one event loop, in 100 ms buckets checked by one
/// repeated task while any are pending. Confined to its loop.
final class LoopDeadlines {
    private static let tickNanoseconds: UInt64 = 100_000_000
    private let loop: any EventLoop
    private var buckets: [UInt64: [(any LongPollDeadlineTarget, UInt64)]] = [:]
    private var ticking: RepeatedTask?

    init(loop: any EventLoop) { self.loop = loop }

    func add(_ connection: any LongPollDeadlineTarget, parking: UInt64, deadline: NIODeadline) {
        let tick = LoopDeadlines.tickNanoseconds
        buckets[(deadline.uptimeNanoseconds + tick - 1) / tick, default: []].append((connection, parking))
        guard ticking == nil else { return }
        let bound = NIOLoopBound(self, eventLoop: loop)
        ticking = loop.scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(100)) { _ in bound.value.expire() }
    }

    private func expire() {
        let now = NIODeadline.now().uptimeNanoseconds / LoopDeadlines.tickNanoseconds
        for key in buckets.keys where key <= now {
            for (connection, parking) in buckets.removeValue(forKey: key) ?? [] { connection.pollTimedOut(parking: parking) }
        }
        if buckets.isEmpty {
            ticking?.cancel()
            ticking = nil
        }
    }
}
