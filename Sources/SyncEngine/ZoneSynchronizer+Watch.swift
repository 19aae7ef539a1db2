import Foundation
import RecordClient
import RecordModel
import Synchronization

extension ZoneSynchronizer {
    /// The subscription that makes the server notify this user of every change in the zone.
    public var zoneSubscription: Subscription {
        Subscription(subscriptionID: "scorebook-\(zoneID.zoneName)-changes", kind: .zone, zoneID: zoneID)
    }

    /// Syncs, subscribes, then long-polls the notification channel and syncs whenever remote
    /// changes are announced, or local edits are committed by another process on the same store
    /// (seen through `StoreFileMonitor`, within a second), until `deadline` (forever when nil,
    /// until the task is cancelled). Connection problems are reported through `onProblem`
    /// and retried with back-off; a refused token ends the watch with an error. The first sync
    /// reports its progress to `onInitialSyncProgress` (the later ones are small).
    ///
    /// Returns why it stopped early when the store's account or sync switch changed (another
    /// process logged out, logged in or ran `sync disable`); nil when the deadline passed.
    @discardableResult
    public func watch(until deadline: Date?, pollTimeout: Int = 30, onChange: (AppliedChange) -> Void,
                      onProblem: (String) -> Void = { _ in },
                      onInitialSyncProgress: ((SyncProgress) -> Void)? = nil) async throws -> SyncStopped?
    {
        try await runWatch(until: deadline, pollTimeout: pollTimeout, coversEveryBook: false, onProblem: onProblem,
                           onInitialSyncProgress: onInitialSyncProgress,
                           subscribe: {
                               try await ensureZone()
                               try await database.saveSubscription(zoneSubscription)
                           },
                           syncNow: { _, _, progress in try await sync(onChange: onChange, onProgress: progress) })
    }

    /// The watch loop, for one zone (this synchronizer's) or for every book of the file
    /// (`coversEveryBook`: local edits in any book wake it). `subscribe` saves the
    /// subscriptions the channel hears; `syncNow` syncs after the notifications that arrived
    /// since the last successful sync, or everything when its flag says so (the first sync,
    /// and after a failure, an outage or a new channel, when notifications may have been missed).
    func runWatch(until deadline: Date?, pollTimeout: Int, coversEveryBook: Bool, onProblem: (String) -> Void,
                  onConnectionRestored: () -> Void = {},
                  removedBookLines: (SyncSummary) -> [String] = ZoneSynchronizer.removedBookLines,
                  onInitialSyncProgress: ((SyncProgress) -> Void)?,
                  subscribe: () async throws -> Void,
                  idleCheck: () async throws -> SyncSummary = { SyncSummary() },
                  syncNow: (_ notifications: [PushNotification], _ everything: Bool, _ progress: ((SyncProgress) -> Void)?) async throws -> SyncSummary)
        async throws -> SyncStopped?
    {
        var notifications: [PushNotification] = []
        var syncEverything = true
        func hasSendableChanges() throws -> Bool {
            coversEveryBook ? try !store.booksWithSendableChanges().isEmpty : try !store.sendableChanges().isEmpty
        }
        var initialSyncProgress = onInitialSyncProgress
        var machine = WatchStateMachine(deadline: deadline, cursor: try store.setting(SyncSettingKey.notificationCursor),
                                        pollTimeout: pollTimeout)
        var channel = try storedChannel()
        var lastProblem: String?
        func problem(_ text: String) {
            if text != lastProblem { onProblem(text) }
            lastProblem = text
        }
        func problem(of error: Error) {
            let failure = Self.syncError(error)
            // A refused token ends the watch with a line of its own.
            if !failure.isAuthenticationFailure { problem(failure.description) }
        }
        let monitor = StoreFileMonitor(storePath: store.path)
        // Other processes' commits since this version have not been looked at yet.
        var seenDataVersion = try store.dataVersion()
        // A long poll survives a sync started by a local edit, and is awaited again after it:
        // the socket cannot be interrupted, and the cursor it polls from has not moved.
        var pendingPoll: (since: String?, task: Task<Result<NotificationPage, Error>, Never>)?
        do {
            while !Task.isCancelled {
                switch machine.nextAction(now: Date()) {
                case .openChannel:
                    do {
                        try checkSession()
                        try await subscribe()
                        if channel == nil {
                            let created = try await database.createNotificationChannel()
                            try storeChannel(created)
                            channel = created
                        }
                        machine.channelOpened()
                        syncEverything = true
                    } catch let stopped as SyncStopped {
                        throw stopped
                    } catch {
                        problem(of: error)
                        machine.channelFailed(Self.clientError(error), now: Date())
                    }
                case .sync:
                    do {
                        defer { initialSyncProgress = nil }
                        seenDataVersion = try store.dataVersion()
                        let summary = try await syncNow(notifications, syncEverything, initialSyncProgress)
                        notifications = []
                        syncEverything = false
                        for dropped in summary.dropped { onProblem(Self.describe(dropped)) }
                        removedBookLines(summary).forEach(onProblem)
                        // A sync after a reported problem: the server is reachable again.
                        if lastProblem != nil { onConnectionRestored() }
                        lastProblem = nil
                        machine.syncSucceeded()
                        try guarded { try store.setSetting(SyncSettingKey.notificationCursor, machine.cursor) }
                    } catch let stopped as SyncStopped {
                        throw stopped
                    } catch {
                        problem(of: error)
                        syncEverything = true
                        machine.syncFailed(Self.clientError(error), now: Date())
                    }
                case .poll(let since, let timeout):
                    guard let current = channel else {
                        machine.pollFailed(.server(ServerError(.notFound, "no notification channel"), httpStatus: 404), now: Date())
                        continue
                    }
                    if pendingPoll?.since != since { pendingPoll = nil }
                    let poll = pendingPoll?.task ?? Task { [database] in
                        do {
                            return .success(try await database.pollNotifications(current, since: since, timeout: timeout))
                        } catch {
                            return .failure(error)
                        }
                    }
                    pendingPoll = (since, poll)
                    let baseline = seenDataVersion
                    let wake = await firstOf({ .answered(await poll.value) }, or: {
                        await self.localWork(monitor, after: baseline, anyBook: coversEveryBook)
                    })
                    switch wake {
                    case .stopped(let stopped):
                        throw stopped
                    case .localChanges:
                        machine.localChangesPending()
                        continue
                    case .slept:
                        continue
                    case .answered(let result):
                        pendingPoll = nil
                        do {
                            let page = try result.get()
                            machine.pollReturned(notificationCount: page.notifications.count, cursor: page.cursor, now: Date())
                            notifications += page.notifications
                            if page.notifications.isEmpty {
                                try guarded { try store.setSetting(SyncSettingKey.notificationCursor, machine.cursor) }
                                if try hasSendableChanges() { machine.localChangesPending() }
                                // A quiet interval: what no notification announces (a removed participant hears nothing).
                                do {
                                    let summary = try await idleCheck()
                                    for dropped in summary.dropped { onProblem(Self.describe(dropped)) }
                                    removedBookLines(summary).forEach(onProblem)
                                } catch let stopped as SyncStopped {
                                    throw stopped
                                } catch {
                                    problem(of: error)
                                }
                            }
                        } catch let stopped as SyncStopped {
                            throw stopped
                        } catch {
                            let clientError = Self.clientError(error)
                            // Notifications may have been missed meanwhile: the next sync covers everything.
                            syncEverything = true
                            if clientError.serverErrorCode == .notFound || clientError.serverErrorCode == .accessDenied {
                                channel = nil
                                try storeChannel(nil)
                            } else {
                                problem(of: error)
                            }
                            machine.pollFailed(clientError, now: Date())
                        }
                    }
                case .sleep(let seconds):
                    // Waiting out a failure (only a change of account or switch cuts it short), or
                    // the interval between syncs where the server gives no notifications (local
                    // edits cut that short too).
                    let baseline = seenDataVersion
                    let wake = await firstOf({ [sleep] in
                        try? await sleep(seconds)
                        return .slept
                    }, or: { [backingOff = machine.isBackingOff] in
                        await self.localWork(monitor, after: baseline, stopOnly: backingOff, anyBook: coversEveryBook)
                    })
                    switch wake {
                    case .stopped(let stopped): throw stopped
                    case .localChanges: machine.localChangesPending()
                    case .answered, .slept: break
                    }
                case .stop:
                    if let failure = machine.failure { throw Self.syncError(failure) }
                    return nil
                }
            }
        } catch let stopped as SyncStopped {
            return stopped
        }
        return nil
    }

    /// What woke a watch waiting for notifications.
    enum WatchWake: Sendable {
        case answered(Result<NotificationPage, Error>)
        /// Another process committed local edits that are waiting to be sent.
        case localChanges
        case stopped(SyncStopped)
        case slept
    }

    /// Runs `first` and `second` and returns the first answer; the other is cancelled (a poll
    /// blocked on its socket runs on in its own task, and may be awaited again).
    private func firstOf(_ first: @escaping @Sendable () async -> WatchWake?,
                         or second: @escaping @Sendable () async -> WatchWake?) async -> WatchWake
    {
        let winner = FirstWake()
        let tasks = [first, second].map { body in Task { if let wake = await body() { winner.offer(wake) } } }
        let wake = await winner.value()
        tasks.forEach { $0.cancel() }
        return wake
    }

    /// Waits until another process commits to the store (not this one: `PRAGMA data_version`
    /// ignores its own writes), then says whether the session ended or local edits wait to be
    /// sent; nil when cancelled. Woken by `monitor`, so it costs nothing while nothing happens.
    func localWork(_ monitor: StoreFileMonitor, after dataVersion: Int64, stopOnly: Bool = false, anyBook: Bool = false) async -> WatchWake? {
        var seen = dataVersion
        repeat {
            guard !Task.isCancelled, let version = try? store.dataVersion() else { return nil }
            if version != seen {
                seen = version
                do {
                    try checkSession()
                } catch let stopped as SyncStopped {
                    return .stopped(stopped)
                } catch {}
                if !stopOnly {
                    let waiting = anyBook ? (try? store.booksWithSendableChanges().count) ?? 0 : (try? store.sendableChanges().count) ?? 0
                    if waiting > 0 { return .localChanges }
                }
            }
        } while await monitor.nextEvent()
        return nil
    }

    /// A watch's lines for the books the server no longer has for this user.
    public static func removedBookLines(_ summary: SyncSummary) -> [String] {
        summary.booksRemoved.map { "book \($0) was deleted on the server or is no longer shared with you, and was removed here" }
    }

    /// A watch's line for a local edit dropped because its record or parent was deleted elsewhere.
    static func describe(_ dropped: DroppedChange) -> String {
        switch dropped.reason {
        case .deleted: return "dropped a local edit of \(dropped.recordName): it was deleted on another machine"
        case .parentDeleted: return "dropped a local edit of \(dropped.recordName): a record it belongs to was deleted on another machine"
        }
    }

    static func clientError(_ error: Error) -> RecordClientError {
        if let error = error as? RecordClientError { return error }
        // A refused token already turned into a line still stops the watch, not retried.
        if let error = error as? SyncError, error.isAuthenticationFailure {
            return .server(ServerError(.authenticationFailed, error.description), httpStatus: 401)
        }
        return .unreachable(String(describing: error))
    }

    private func storedChannel() throws -> NotificationChannel? {
        guard let text = try store.setting(SyncSettingKey.notificationChannel), let json = try? JSONValue.parse(text),
              let token = json["apnsToken"]?.stringValue, let url = json["webcourierURL"]?.stringValue
        else { return nil }
        return NotificationChannel(apnsToken: token, webcourierURL: url)
    }

    private func storeChannel(_ channel: NotificationChannel?) throws {
        let text = channel.map {
            JSONValue.object(["apnsToken": .string($0.apnsToken), "webcourierURL": .string($0.webcourierURL)]).serializedString()
        }
        try guarded {
            try store.setSetting(SyncSettingKey.notificationChannel, text)
            if channel == nil { try store.setSetting(SyncSettingKey.notificationCursor, nil) }
        }
    }
}

/// The first of several offered wake-ups, for one waiter.
private final class FirstWake: Sendable {
    private struct State {
        var wake: ZoneSynchronizer.WatchWake?
        var waiter: CheckedContinuation<ZoneSynchronizer.WatchWake, Never>?
    }

    private let state = Mutex(State())

    func offer(_ offered: ZoneSynchronizer.WatchWake) {
        let waiting = state.withLock { state -> CheckedContinuation<ZoneSynchronizer.WatchWake, Never>? in
            guard state.wake == nil else { return nil }
            state.wake = offered
            defer { state.waiter = nil }
            return state.waiter
        }
        waiting?.resume(returning: offered)
    }

    func value() async -> ZoneSynchronizer.WatchWake {
        await withCheckedContinuation { continuation in
            let wake = state.withLock { state in
                if state.wake == nil { state.waiter = continuation }
                return state.wake
            }
            if let wake { continuation.resume(returning: wake) }
        }
    }
}
