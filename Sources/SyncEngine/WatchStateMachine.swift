import Foundation
import RecordClient
import RecordModel

/// `sync --watch` as a state machine: open a notification channel, sync, then long-poll and
/// sync again whenever notifications arrive, until the deadline. The notification cursor is
/// committed only after the sync that follows it succeeded, so a crash never skips one.
package struct WatchStateMachine: Sendable {
    package enum Action: Equatable, Sendable {
        /// Create (or reuse) the notification channel and the zone subscription.
        case openChannel
        case sync
        /// Long-poll the channel for notifications after `since`, for at most `timeout` seconds.
        case poll(since: String?, timeout: Int)
        case sleep(seconds: Double)
        /// The deadline passed (or a failure that retrying cannot fix; see `failure`).
        case stop
    }

    enum Phase: Equatable {
        case needsChannel, needsSync, polling, stopped
    }

    private var phase: Phase = .needsChannel
    private let deadline: Date?
    private let pollTimeout: Int
    private var sleepUntil: Date?
    private var consecutiveFailures = 0
    private var uncommittedCursor: String?
    /// The server refused to set up notifications: sync every poll interval instead.
    package private(set) var isPollingBySync = false
    /// The cursor of the last notification whose changes were synced.
    package private(set) var cursor: String?
    /// Why the watch stopped early, if it did.
    package private(set) var failure: RecordClientError?

    package init(deadline: Date?, cursor: String?, pollTimeout: Int = 30) {
        self.deadline = deadline
        self.cursor = cursor
        self.pollTimeout = max(1, pollTimeout)
    }

    package mutating func nextAction(now: Date) -> Action {
        if phase == .stopped { return .stop }
        let remaining = deadline.map { $0.timeIntervalSince(now) }
        if let remaining, remaining <= 0 {
            phase = .stopped
            return .stop
        }
        if let sleepUntil, sleepUntil > now {
            let wait = sleepUntil.timeIntervalSince(now)
            return .sleep(seconds: min(wait, remaining ?? wait))
        }
        sleepUntil = nil
        switch phase {
        case .needsChannel: return .openChannel
        case .needsSync: return .sync
        case .polling where isPollingBySync:
            phase = .needsSync
            let wait = Double(pollTimeout)
            sleepUntil = now.addingTimeInterval(wait)
            return .sleep(seconds: min(wait, remaining ?? wait))
        case .polling:
            let timeout = remaining.map { min(pollTimeout, max(1, Int($0.rounded(.up)))) } ?? pollTimeout
            return .poll(since: cursor, timeout: timeout)
        case .stopped: return .stop
        }
    }

    package mutating func channelOpened() {
        consecutiveFailures = 0
        phase = .needsSync
    }

    package mutating func channelFailed(_ error: RecordClientError, now: Date) {
        switch error.serverErrorCode {
        case .badRequest?, .notFound?, .accessDenied?:
            // Notifications are not to be had from this server; keep syncing without them.
            isPollingBySync = true
            phase = .needsSync
        default:
            handleFailure(error, now: now)
        }
    }

    package mutating func syncSucceeded() {
        consecutiveFailures = 0
        if let uncommittedCursor { cursor = uncommittedCursor }
        uncommittedCursor = nil
        phase = .polling
    }

    package mutating func syncFailed(_ error: RecordClientError, now: Date) {
        handleFailure(error, now: now)
    }

    /// A poll answered. Notifications mean remote changes: sync, then move the cursor.
    package mutating func pollReturned(notificationCount: Int, cursor newCursor: String?, now: Date) {
        consecutiveFailures = 0
        if notificationCount > 0 {
            uncommittedCursor = newCursor
            phase = .needsSync
        } else if let newCursor {
            cursor = newCursor
        }
    }

    /// Waiting out failures: the wait is not cut short for local edits, which could not be
    /// sent now either.
    package var isBackingOff: Bool { consecutiveFailures > 0 }

    /// Local edits are waiting in the outbox (made by another process meanwhile): sync, now
    /// rather than at the end of the poll interval when the server gives no notifications.
    package mutating func localChangesPending() {
        if phase == .polling { phase = .needsSync }
        if isPollingBySync && !isBackingOff { sleepUntil = nil }
    }

    package mutating func pollFailed(_ error: RecordClientError, now: Date) {
        switch error.serverErrorCode {
        case .notFound?, .accessDenied?:
            // The channel is gone (a reset server): open a new one, then catch up by syncing.
            phase = .needsChannel
            cursor = nil
            uncommittedCursor = nil
        default:
            handleFailure(error, now: now)
            // After an outage notifications may have been missed: sync before polling again.
            if phase != .stopped && phase != .needsChannel { phase = .needsSync }
        }
    }

    private mutating func handleFailure(_ error: RecordClientError, now: Date) {
        switch error.serverErrorCode {
        case .authenticationFailed?, .authenticationRequired?:
            failure = error
            phase = .stopped
        default:
            consecutiveFailures += 1
            let delay = min(10, 0.5 * Double(1 << min(consecutiveFailures - 1, 10)))
            sleepUntil = now.addingTimeInterval(delay)
        }
    }
}
