import Foundation
import RecordStore
import Synchronization

/// Wakes waiting deliveries (long-polls and event streams) when a commit lands. Nothing polls
/// the database on a timer: a waiter sleeps until a commit of its database wakes it, and one read
/// per wake serves every waiter of that database.
package final class PushHub: Sendable {
    /// What a wait returns: the notifications after the waiter's cursor and the commit generation
    /// they reflect (nil when the batch was cut at the limit, so the next wait must read again).
    package struct Delivery: Sendable {
        package var notifications: [StoredNotification]
        package var generation: Int?
    }

    static let batchLimit = 500

    private struct Waiter {
        var cursor: Int64
        var continuation: CheckedContinuation<Delivery, Never>
    }

    private struct State {
        var waiters: [Int64: [UUID: Waiter]] = [:]
        /// Per database, how many commits have landed; lets a waiter skip its read when nothing
        /// happened since its last delivery.
        var generations: [Int64: Int] = [:]
        var closed = false
        var wakeTask: Task<Void, Never>?
    }

    private let store: any RecordStorage
    private let state = Mutex(State())
    /// Monotonic nanoseconds (`DispatchTime.uptimeNanoseconds`) when the last commit reached the
    /// hub and when the last delivery (an event written to a stream, a long-poll answer handed to
    /// the server) finished: their difference is the server's own fan-out time for one commit, so
    /// the bench can tell it from its client's reading time.
    private let lastCommitNanoseconds = Atomic<UInt64>(0)
    private let lastDeliveryNanoseconds = Atomic<UInt64>(0)
    /// Commits to wake for, handled one at a time in order by the wake task: a wake that reads
    /// before a later commit puts its waiters back before that commit's wake takes them.
    private let commits: AsyncStream<Set<Int64>>.Continuation

    package init(store: any RecordStorage) {
        self.store = store
        let (stream, continuation) = AsyncStream<Set<Int64>>.makeStream()
        self.commits = continuation
        let wakeTask = Task { [weak self] in
            for await databaseIDs in stream {
                guard let self else { return }
                for databaseID in databaseIDs { await self.wake(databaseID) }
            }
        }
        state.withLock { $0.wakeTask = wakeTask }
    }

    deinit { commits.finish() }

    package var isClosed: Bool { state.withLock { $0.closed } }

    /// How many deliveries are waiting right now (for metrics and tests).
    package var waiterCount: Int { state.withLock { $0.waiters.values.reduce(0) { $0 + $1.count } } }

    /// Called by the store after every commit.
    package func commitLanded(_ databaseIDs: Set<Int64>) {
        lastCommitNanoseconds.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        commits.yield(databaseIDs)
    }

    /// Called after a delivery of notifications has been written (not for heartbeats or empty answers).
    package func deliveryWritten() {
        lastDeliveryNanoseconds.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
    }

    /// Seconds from the last commit to the last delivery written after it (0 when none followed it).
    package var lastCommitToLastDeliverySeconds: Double {
        let commit = lastCommitNanoseconds.load(ordering: .relaxed)
        let delivery = lastDeliveryNanoseconds.load(ordering: .relaxed)
        return delivery > commit ? Double(delivery - commit) / 1e9 : 0
    }

    private func wake(_ databaseID: Int64) async {
        let (generation, taken) = state.withLock { state -> (Int, [UUID: Waiter]) in
            let generation = (state.generations[databaseID] ?? 0) + 1
            state.generations[databaseID] = generation
            return (generation, state.waiters.removeValue(forKey: databaseID) ?? [:])
        }
        guard let lowest = taken.values.map(\.cursor).min() else { return }
        let batch = (try? await store.notifications(databaseID: databaseID, after: lowest, limit: PushHub.batchLimit)) ?? []
        let complete = batch.count < PushHub.batchLimit
        // A full batch read from the lowest cursor may end before a waiter further ahead: such a
        // waiter gets its own read (one per distinct cursor), so it is not left asleep with
        // notifications pending.
        var aheadReads: [Int64: [StoredNotification]] = [:]
        if !complete, let last = batch.last?.id {
            for cursor in Set(taken.values.map(\.cursor)) where cursor >= last {
                aheadReads[cursor] = (try? await store.notifications(databaseID: databaseID, after: cursor, limit: PushHub.batchLimit)) ?? []
            }
        }
        let ready = state.withLock { state -> [(Waiter, [StoredNotification])] in
            var ready: [(Waiter, [StoredNotification])] = []
            for (id, waiter) in taken {
                let mine = aheadReads[waiter.cursor] ?? batch.filter { $0.id > waiter.cursor }
                if mine.isEmpty && !state.closed {
                    // The commit fired nothing for this waiter: keep waiting (its timeout still runs).
                    state.waiters[databaseID, default: [:]][id] = waiter
                } else {
                    ready.append((waiter, mine))
                }
            }
            return ready
        }
        for (waiter, mine) in ready {
            waiter.continuation.resume(returning: Delivery(notifications: mine, generation: complete ? generation : nil))
        }
    }

    /// Waits until there are notifications after `cursor`, or `timeout` passes (empty result),
    /// or the hub closes. `knownGeneration` is the generation of the caller's previous delivery.
    package func wait(databaseID: Int64, after cursor: Int64, knownGeneration: Int?, timeout: Duration) async -> Delivery {
        let id = UUID()
        return await withCheckedContinuation { continuation in
            let current = state.withLock { state -> Int? in
                if state.closed { return nil }
                state.waiters[databaseID, default: [:]][id] = Waiter(cursor: cursor, continuation: continuation)
                return state.generations[databaseID] ?? 0
            }
            guard let current else {
                continuation.resume(returning: Delivery(notifications: [], generation: nil))
                return
            }
            if knownGeneration != current {
                // Something may have landed since the caller last looked: read once now.
                Task { [self] in
                    let pending = (try? await store.notifications(databaseID: databaseID, after: cursor, limit: PushHub.batchLimit)) ?? []
                    guard !pending.isEmpty, let waiter = remove(databaseID, id) else { return }
                    waiter.continuation.resume(returning: Delivery(notifications: pending,
                                                                   generation: pending.count < PushHub.batchLimit ? current : nil))
                }
            }
            let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in
                guard let waiter = remove(databaseID, id) else { return }
                waiter.continuation.resume(returning: Delivery(notifications: [], generation: current))
            }
        }
    }

    private func remove(_ databaseID: Int64, _ id: UUID) -> Waiter? {
        state.withLock { $0.waiters[databaseID]?.removeValue(forKey: id) }
    }

    /// Ends every wait (on shutdown) and refuses new ones.
    package func close() {
        let all = state.withLock { state in
            state.closed = true
            let all = state.waiters.values.flatMap(\.values)
            state.waiters.removeAll()
            return all
        }
        commits.finish()
        for waiter in all { waiter.continuation.resume(returning: Delivery(notifications: [], generation: nil)) }
    }
}
