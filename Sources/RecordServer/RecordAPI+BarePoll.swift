import RecordModel
import RecordStore
import Synchronization

/// A courier poll without `since` and without `Last-Event-ID`: CloudKit JS's. Its library hands
/// the answer's body to a parser that reads `body.ck`, and polls again 10 ms after each answer,
/// so each answer is one notification as its bare payload (`{"ck": …}`), and the server keeps
/// how far this courier's polls were answered (in the store, so any daemon and a restarted one
/// resume there): the next poll gets the next notification, or waits for one, or at its timeout
/// `{}`. Polls with a cursor keep the envelope (`CourierAnswer`).
extension RecordAPI {
    func serveBarePoll(_ channel: PushToken, timeout: Int) async throws -> APIResponse {
        let deadline = ContinuousClock.now + .seconds(timeout)
        let position = channel.barePollPosition
        while true {
            // Registered before the read, so a commit between the read and the wait still wakes it.
            let waiter = pushHub.commitWaiters.register(channel.databaseID)
            defer { if let waiter { pushHub.commitWaiters.remove(waiter) } }
            if let next = try await store.notifications(databaseID: channel.databaseID, after: position, limit: 1).first {
                // Written down before the answer goes out: the client's next poll, 10 ms after
                // this answer, must not be handed the same notification again.
                try await store.advanceCourierPosition(token: channel.token, to: next.id)
                return APIResponse(status: 200, json: .raw(next.payload))
            }
            guard let waiter, timeout > 0, ContinuousClock.now < deadline else { return APIResponse(status: 200, json: [:]) }
            await waiter.wait(until: deadline)
        }
    }
}

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
