import Foundation
import RecordStore

/// Wakes waiting deliveries (long-polls and event streams) when a commit lands. Nothing polls
/// the database on a timer: a waiter sleeps until a commit of its database wakes it, and one read
/// per wake serves every waiter of that database.
public final class PushHub: @unchecked Sendable {
    /// What a wait returns: the notifications after the waiter's cursor and the commit generation
    /// they reflect (nil when the batch was cut at the limit, so the next wait must read again).
    public struct Delivery: Sendable {
        public var notifications: [StoredNotification]
        public var generation: Int?
    }

    static let batchLimit = 500

    private struct Waiter {
        var cursor: Int64
        var continuation: CheckedContinuation<Delivery, Never>
    }

    private let store: any RecordStorage
    private let lock = NSLock()
    private var waiters: [Int64: [UUID: Waiter]] = [:]
    /// Per database, how many commits have landed; lets a waiter skip its read when nothing
    /// happened since its last delivery.
    private var generations: [Int64: Int] = [:]
    private var closed = false
    private let deliveryQueue = DispatchQueue(label: "scorebookd.push")

    public init(store: any RecordStorage) {
        self.store = store
    }

    public var isClosed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return closed
    }

    /// How many deliveries are waiting right now (for metrics and tests).
    public var waiterCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return waiters.values.reduce(0) { $0 + $1.count }
    }

    /// Called by the store after every commit.
    public func commitLanded(_ databaseIDs: Set<Int64>) {
        deliveryQueue.async { [self] in
            for databaseID in databaseIDs { wake(databaseID) }
        }
    }

    private func wake(_ databaseID: Int64) {
        lock.lock()
        let generation = (generations[databaseID] ?? 0) + 1
        generations[databaseID] = generation
        let taken = waiters.removeValue(forKey: databaseID) ?? [:]
        lock.unlock()
        guard let lowest = taken.values.map(\.cursor).min() else { return }
        let batch = (try? store.notifications(databaseID: databaseID, after: lowest, limit: PushHub.batchLimit)) ?? []
        let complete = batch.count < PushHub.batchLimit
        // A full batch read from the lowest cursor may end before a waiter further ahead: such a
        // waiter gets its own read (one per distinct cursor), so it is not left asleep with
        // notifications pending.
        var aheadReads: [Int64: [StoredNotification]] = [:]
        if !complete, let last = batch.last?.id {
            for cursor in Set(taken.values.map(\.cursor)) where cursor >= last {
                aheadReads[cursor] = (try? store.notifications(databaseID: databaseID, after: cursor, limit: PushHub.batchLimit)) ?? []
            }
        }
        var ready: [(Waiter, [StoredNotification])] = []
        lock.lock()
        for (id, waiter) in taken {
            let mine = aheadReads[waiter.cursor] ?? batch.filter { $0.id > waiter.cursor }
            if mine.isEmpty && !closed {
                // The commit fired nothing for this waiter: keep waiting (its timeout still runs).
                waiters[databaseID, default: [:]][id] = waiter
            } else {
                ready.append((waiter, mine))
            }
        }
        lock.unlock()
        for (waiter, mine) in ready {
            waiter.continuation.resume(returning: Delivery(notifications: mine, generation: complete ? generation : nil))
        }
    }

    /// Waits until there are notifications after `cursor`, or `timeout` passes (empty result),
    /// or the hub closes. `knownGeneration` is the generation of the caller's previous delivery.
    public func wait(databaseID: Int64, after cursor: Int64, knownGeneration: Int?, timeout: Duration) async -> Delivery {
        let id = UUID()
        return await withCheckedContinuation { continuation in
            lock.lock()
            if closed {
                lock.unlock()
                continuation.resume(returning: Delivery(notifications: [], generation: nil))
                return
            }
            let current = generations[databaseID] ?? 0
            waiters[databaseID, default: [:]][id] = Waiter(cursor: cursor, continuation: continuation)
            lock.unlock()
            if knownGeneration != current {
                // Something may have landed since the caller last looked: read once now.
                deliveryQueue.async { [self] in
                    let pending = (try? store.notifications(databaseID: databaseID, after: cursor, limit: PushHub.batchLimit)) ?? []
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
        lock.lock()
        defer { lock.unlock() }
        return waiters[databaseID]?.removeValue(forKey: id)
    }

    /// Ends every wait (on shutdown) and refuses new ones.
    public func close() {
        lock.lock()
        closed = true
        let all = waiters.values.flatMap(\.values)
        waiters.removeAll()
        lock.unlock()
        for waiter in all { waiter.continuation.resume(returning: Delivery(notifications: [], generation: nil)) }
    }
}
