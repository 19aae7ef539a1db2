import Foundation
import RecordClient
import RecordModel

/// Runs sync cycles between a `LocalRecordStore` and one zone of a server: send the outbox,
/// fetch the change feed, merge. The decisions are made by the pure types of this module
/// (`OutboxPlanner`, `SendDecision`, `RecordMerge`, `ChangeApplyPlanner`,
/// `ZoneFetchStateMachine`, `WatchStateMachine`); this class only carries them out.
///
/// ```swift
/// let engine = ZoneSynchronizer(store: store, database: RecordClient(endpoint: endpoint),
///                         zoneID: ZoneID(zoneName: "ScorebookData"))
/// let summary = try await engine.sync { change in print(change.kind, change.recordName) }
/// ```
public final class ZoneSynchronizer: @unchecked Sendable {
    public let store: LocalRecordStore
    public let zoneID: ZoneID
    let database: any CloudDatabase
    let retryPolicy: RetryPolicy
    let sleep: @Sendable (Double) async throws -> Void

    /// Send rounds per sync: each round sends what is still queued (merged records, records
    /// whose parents were refused meanwhile, throttled ones).
    static let maximumSendRounds = 8

    public init(store: LocalRecordStore, database: any CloudDatabase, zoneID: ZoneID, retryPolicy: RetryPolicy = RetryPolicy(),
                sleep: @escaping @Sendable (Double) async throws -> Void = { seconds in
                    try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
                })
    {
        self.store = store
        self.database = database
        self.zoneID = zoneID
        self.retryPolicy = retryPolicy
        self.sleep = sleep
    }

    /// One full cycle: send local changes, fetch remote ones, send what merging produced (after a
    /// lost answer, fetch first).
    /// Records the time of success, or the error, in the store.
    @discardableResult
    public func sync(onChange: (AppliedChange) -> Void = { _ in }) async throws -> SyncSummary {
        var summary = SyncSummary()
        do {
            try await ensureZone()
            if try store.hasUnacknowledgedSends() {
                // A send whose answer was lost may have been applied, and the record deleted by
                // another machine since: fetch first, so its tombstone drops the entry instead of
                // a resent create bringing the record back.
                try await fetchChanges(&summary, onChange: onChange)
            }
            try await sendOutbox(&summary, onChange: onChange)
            try await fetchChanges(&summary, onChange: onChange)
            if try !store.sendableChanges().isEmpty {
                try await sendOutbox(&summary, onChange: onChange)
            }
            try store.setSetting(SyncSettingKey.lastSync, ISO8601.string(from: Date()))
            try store.setSetting(SyncSettingKey.lastError, nil)
            return summary
        } catch {
            let failure = Self.syncError(error)
            try? store.setSetting(SyncSettingKey.lastError, failure.description)
            throw failure
        }
    }

    static func syncError(_ error: Error) -> SyncError {
        switch error {
        case let error as SyncError: return error
        case RecordClientError.server(let serverError, _)
            where serverError.code == .authenticationFailed || serverError.code == .authenticationRequired:
            return SyncError("the server refused the account's token (\(serverError.code.rawValue)); log in again")
        case let error as RecordClientError: return SyncError(error.description)
        default: return SyncError(String(describing: error))
        }
    }

    func ensureZone() async throws {
        guard try store.setting(SyncSettingKey.zoneReady) == nil else { return }
        try await database.createZone(zoneID)
        try store.setSetting(SyncSettingKey.zoneReady, "1")
    }

    /// The zone is gone on the server: create it again and queue every local record.
    func recreateZone() async throws {
        try await database.createZone(zoneID)
        try store.resetForRecreatedZone(tokenKey: SyncSettingKey.syncToken, flagKey: SyncSettingKey.refetchInProgress)
        try store.setSetting(SyncSettingKey.zoneReady, "1")
    }
}

/// ISO-8601 with milliseconds, the form every date takes in output and settings.
public enum ISO8601 {
    public static func string(from date: Date) -> String { formatter().string(from: date) }

    public static func date(from text: String) -> Date? {
        formatter().date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }

    private static func formatter() -> ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}
