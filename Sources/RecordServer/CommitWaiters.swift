import Synchronization

/// Polls without a cursor waiting for a commit of their database, each in its own request task
/// (the hub's parked long-polls answer with the envelope; these answer one notification and write
/// the courier's position first, which a request does simply). They are few: one per open
/// CloudKit JS page. Woken by every commit the hub hears of, and all at once when it closes.
final class CommitWaiters: Sendable {
    /// One waiting poll: fired once, by a commit, its deadline or the daemon shutting down.
    final class Waiter: Sendable {
        let databaseID: Int64
        private let state = Mutex<(fired: Bool, continuation: CheckedContinuation<Void, Never>?)>((false, nil))

        init(databaseID: Int64) { self.databaseID = databaseID }

        func fire() {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.fired = true
                return state.continuation.take()
            }
            continuation?.resume()
        }

        /// Returns once fired, or at `deadline`.
        func wait(until deadline: ContinuousClock.Instant) async {
            let timer = Task { [weak self] in
                try? await Task.sleep(until: deadline, clock: .continuous)
                self?.fire()
            }
            defer { timer.cancel() }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let fired = state.withLock { state in
                        if !state.fired { state.continuation = continuation }
                        return state.fired
                    }
                    if fired { continuation.resume() }
                }
            } onCancel: {
                fire()
            }
        }
    }

    private struct State {
        var waiters: [Int64: [ObjectIdentifier: Waiter]] = [:]
        var closed = false
    }

    private let state = Mutex(State())

    /// A waiter for the next commit of `databaseID`; nil once the daemon is shutting down.
    func register(_ databaseID: Int64) -> Waiter? {
        let waiter = Waiter(databaseID: databaseID)
        let registered = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.waiters[databaseID, default: [:]][ObjectIdentifier(waiter)] = waiter
            return true
        }
        return registered ? waiter : nil
    }

    func remove(_ waiter: Waiter) {
        state.withLock { state in
            state.waiters[waiter.databaseID]?.removeValue(forKey: ObjectIdentifier(waiter))
            if state.waiters[waiter.databaseID]?.isEmpty == true { state.waiters.removeValue(forKey: waiter.databaseID) }
        }
    }

    /// A commit of `databaseIDs` landed (the empty set: any database may have changed).
    func wake(_ databaseIDs: Set<Int64>) {
        let woken = state.withLock { state -> [Waiter] in
            if databaseIDs.isEmpty { return state.waiters.values.flatMap(\.values) }
            return databaseIDs.flatMap { databaseID in state.waiters[databaseID].map { Array($0.values) } ?? [] }
        }
        for waiter in woken { waiter.fire() }
    }

    /// On shutdown: every waiting poll answers now (empty), and none waits again.
    func close() {
        let woken = state.withLock { state -> [Waiter] in
            state.closed = true
            return state.waiters.values.flatMap(\.values)
        }
        for waiter in woken { waiter.fire() }
    }

    var count: Int { state.withLock { $0.waiters.values.reduce(0) { $0 + $1.count } } }
}
