import Foundation
import RecordClient
import RecordModel

extension ZoneSynchronizer {
    /// The subscription that makes the server notify this user of every change in the zone.
    public var zoneSubscription: Subscription {
        Subscription(subscriptionID: "scorebook-\(zoneID.zoneName)-changes", kind: .zone, zoneID: zoneID)
    }

    /// Syncs, subscribes, then long-polls the notification channel and syncs whenever remote
    /// changes are announced (or local ones are waiting), until `deadline` (forever when nil,
    /// until the task is cancelled). Connection problems are reported through `onProblem`
    /// and retried with back-off; a refused token ends the watch with an error. The first sync
    /// reports its progress to `onInitialSyncProgress` (the later ones are small).
    public func watch(until deadline: Date?, pollTimeout: Int = 30, onChange: (AppliedChange) -> Void,
                      onProblem: (String) -> Void = { _ in },
                      onInitialSyncProgress: ((SyncProgress) -> Void)? = nil) async throws
    {
        var initialSyncProgress = onInitialSyncProgress
        var machine = WatchStateMachine(deadline: deadline, cursor: try store.setting(SyncSettingKey.notificationCursor),
                                        pollTimeout: pollTimeout)
        var channel = try storedChannel()
        var lastProblem: String?
        func problem(_ text: String) {
            if text != lastProblem { onProblem(text) }
            lastProblem = text
        }
        while !Task.isCancelled {
            switch machine.nextAction(now: Date()) {
            case .openChannel:
                do {
                    try await ensureZone()
                    try await database.saveSubscription(zoneSubscription)
                    if channel == nil {
                        let created = try await database.createNotificationChannel()
                        try storeChannel(created)
                        channel = created
                    }
                    machine.channelOpened()
                } catch {
                    problem(Self.syncError(error).description)
                    machine.channelFailed(Self.clientError(error), now: Date())
                }
            case .sync:
                do {
                    defer { initialSyncProgress = nil }
                    try await sync(onChange: onChange, onProgress: initialSyncProgress)
                    lastProblem = nil
                    machine.syncSucceeded()
                    try store.setSetting(SyncSettingKey.notificationCursor, machine.cursor)
                } catch {
                    problem(Self.syncError(error).description)
                    machine.syncFailed(Self.clientError(error), now: Date())
                }
            case .poll(let since, let timeout):
                guard let current = channel else {
                    machine.pollFailed(.server(ServerError(.notFound, "no notification channel"), httpStatus: 404), now: Date())
                    continue
                }
                do {
                    let page = try await database.pollNotifications(current, since: since, timeout: timeout)
                    machine.pollReturned(notificationCount: page.notifications.count, cursor: page.cursor, now: Date())
                    if page.notifications.isEmpty {
                        try store.setSetting(SyncSettingKey.notificationCursor, machine.cursor)
                        if try !store.sendableChanges().isEmpty { machine.localChangesPending() }
                    }
                } catch {
                    let clientError = Self.clientError(error)
                    if clientError.serverErrorCode == .notFound || clientError.serverErrorCode == .accessDenied {
                        channel = nil
                        try storeChannel(nil)
                    } else {
                        problem(Self.syncError(error).description)
                    }
                    machine.pollFailed(clientError, now: Date())
                }
            case .sleep(let seconds):
                try await sleep(seconds)
            case .stop:
                if let failure = machine.failure { throw Self.syncError(failure) }
                return
            }
        }
    }

    static func clientError(_ error: Error) -> RecordClientError {
        if let error = error as? RecordClientError { return error }
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
        try store.setSetting(SyncSettingKey.notificationChannel, text)
        if channel == nil { try store.setSetting(SyncSettingKey.notificationCursor, nil) }
    }
}
