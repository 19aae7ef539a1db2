import RecordClient
import RecordModel

/// The fetch loop of one zone as a state machine: fetch pages from the stored token until
/// `moreComing` is false, refetch from scratch when the token expired, recreate the zone when
/// it is gone, and wait out `THROTTLED`/`TRY_AGAIN_LATER`.
///
/// ```swift
/// var machine = ZoneFetchStateMachine(syncToken: stored)
/// var action = machine.start()
/// // .fetch(token) → call changes/zone, apply the page, then action = machine.pageApplied(...)
/// ```
package struct ZoneFetchStateMachine: Sendable {
    package enum Action: Equatable, Sendable {
        /// Fetch the page after this token (from the beginning when nil).
        case fetch(syncToken: String?)
        /// The stored token is useless: forget it and mark every local server copy unseen,
        /// then fetch from the beginning.
        case restartFromScratch
        /// The zone does not exist: create it and queue every local record again.
        case recreateZone
        /// Wait, then fetch again from the same token.
        case wait(seconds: Double)
        /// Done. With `reconcile`, the feed was read from scratch: local records the server
        /// no longer has were deleted there.
        case finish(reconcile: Bool)
        case fail(RecordClientError)
    }

    package private(set) var syncToken: String?
    package private(set) var isRefetchingFromScratch: Bool
    package private(set) var pagesApplied = 0
    private var hasRecreatedZone = false
    private var failedAttempts = 0
    private var restarts = 0
    private let retryPolicy: RetryPolicy
    private let maximumPages: Int

    /// - Parameters:
    ///   - syncToken: the token stored after the last applied page.
    ///   - refetchInProgress: a refetch from scratch was interrupted and must be finished.
    package init(syncToken: String?, refetchInProgress: Bool = false, retryPolicy: RetryPolicy = RetryPolicy(), maximumPages: Int = 100_000) {
        self.syncToken = refetchInProgress ? nil : syncToken
        self.isRefetchingFromScratch = refetchInProgress
        self.retryPolicy = retryPolicy
        self.maximumPages = maximumPages
    }

    package mutating func start() -> Action { .fetch(syncToken: syncToken) }

    /// A page was applied locally (and `syncToken` stored with it).
    package mutating func pageApplied(syncToken: String, moreComing: Bool) -> Action {
        self.syncToken = syncToken
        pagesApplied += 1
        failedAttempts = 0
        guard moreComing else { return .finish(reconcile: isRefetchingFromScratch) }
        guard pagesApplied < maximumPages else {
            return .fail(.invalidResponse("changes/zone still had more after \(maximumPages) pages"))
        }
        return .fetch(syncToken: syncToken)
    }

    package mutating func fetchFailed(_ error: RecordClientError) -> Action {
        switch error.serverErrorCode {
        case .changeTokenExpired?:
            return restartFromScratch(after: error)
        case .badRequest? where syncToken != nil:
            // A token the server does not honour (for example from a server that was reset).
            return restartFromScratch(after: error)
        case .zoneNotFound?:
            guard !hasRecreatedZone else { return .fail(error) }
            hasRecreatedZone = true
            return .recreateZone
        case .throttled?, .tryAgainLater?, .internalError?:
            failedAttempts += 1
            guard let delay = retryPolicy.delay(afterAttempt: failedAttempts, retryAfter: error.retryAfter) else { return .fail(error) }
            return .wait(seconds: delay)
        default:
            return .fail(error)
        }
    }

    private mutating func restartFromScratch(after error: RecordClientError) -> Action {
        guard restarts < 2 else { return .fail(error) }
        restarts += 1
        return .restartFromScratch
    }

    /// The local store forgot its token and marked its server copies unseen.
    package mutating func restartedFromScratch() -> Action {
        syncToken = nil
        isRefetchingFromScratch = true
        return .fetch(syncToken: nil)
    }

    /// The zone was created again and every local record queued for sending.
    package mutating func zoneRecreated() -> Action {
        syncToken = nil
        isRefetchingFromScratch = false
        return .fetch(syncToken: nil)
    }

    /// The wait asked for by `.wait` is over.
    package mutating func waited() -> Action { .fetch(syncToken: syncToken) }
}
