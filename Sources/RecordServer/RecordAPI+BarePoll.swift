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
