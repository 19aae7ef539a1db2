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
public final class ZoneSynchronizer: Sendable {
    public let store: LocalRecordStore
    public let zoneID: ZoneID
    let database: any CloudDatabase
    let retryPolicy: RetryPolicy
    let sleep: @Sendable (Double) async throws -> Void
    /// The account and switch this engine runs for; nil runs unchecked (in-process tests that
    /// make an engine by hand).
    let session: SyncSession?

    /// Send rounds per sync: each round sends what is still queued (merged records, records
    /// whose parents were refused meanwhile, throttled ones).
    static let maximumSendRounds = 8

    // `package`: a synchronizer outside an `AccountManager` runs without its session checks;
    // apps get theirs from `makeSynchronizer(zoneID:)` (or use RecordSync's `SyncStore`).
    package init(store: LocalRecordStore, database: any CloudDatabase, zoneID: ZoneID, retryPolicy: RetryPolicy = RetryPolicy(),
                 session: SyncSession? = nil,
                sleep: @escaping @Sendable (Double) async throws -> Void = { seconds in
                    try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
                })
    {
        self.store = store
        self.session = session
        self.database = database
        self.zoneID = zoneID
        self.retryPolicy = retryPolicy
        self.sleep = sleep
    }

    /// One full cycle: send local changes, fetch remote ones, send what merging produced (after a
    /// lost answer, fetch first).
    /// Records the time of success, or the error, in the store. `onProgress` hears of the counts
    /// sent and received as they grow, and last of the end (`finished`), whatever the outcome.
    @discardableResult
    public func sync(onChange: (AppliedChange) -> Void = { _ in },
                     onProgress: ((SyncProgress) -> Void)? = nil) async throws -> SyncSummary
    {
        var summary = SyncSummary()
        let progress = SyncProgressReporter(onProgress)
        defer { progress.finish() }
        do {
            try checkSession()
            try await ensureZone()
            if try store.hasUnacknowledgedSends() {
                // A send whose answer was lost may have been applied, and the record deleted by
                // another machine since: fetch first, so its tombstone drops the entry instead of
                // a resent create bringing the record back.
                try await fetchChanges(&summary, progress: progress, onChange: onChange)
            }
            try await sendOutbox(&summary, progress: progress, onChange: onChange)
            try await fetchChanges(&summary, progress: progress, onChange: onChange)
            if try !store.sendableChanges().isEmpty {
                try await sendOutbox(&summary, progress: progress, onChange: onChange)
            }
            try await downloadMissingPictures(&summary, progress: progress)
            try guarded {
                try store.setSetting(SyncSettingKey.lastSync, ISO8601.string(from: Date()))
                try store.setSetting(SyncSettingKey.lastError, nil)
            }
            return summary
        } catch let stopped as SyncStopped {
            // The store is no longer this session's: nothing of it is written there.
            throw stopped
        } catch {
            let failure = Self.syncError(error)
            try? guarded { try store.setSetting(SyncSettingKey.lastError, failure.description) }
            throw failure
        }
    }

    /// Throws `SyncStopped` when the store's account or sync switch changed since this engine
    /// was made.
    func checkSession() throws {
        guard let session else { return }
        try store.withConnection { try session.verify(in: $0) }
    }

    /// Runs `body`, a write into the store from a server's answer (or the marking of a batch
    /// about to be sent), in one transaction with the check that the store is still this
    /// session's: there is no moment between the check and the write for a login to slip in.
    func guarded<T>(_ body: () throws -> T) throws -> T {
        guard let session else { return try body() }
        return try store.transaction { connection in
            try session.verify(in: connection)
            return try body()
        }
    }

    static func syncError(_ error: Error) -> SyncError {
        switch error {
        case let error as SyncError: return error
        case let error as SyncStopped: return SyncError(error.description)
        case RecordClientError.server(let serverError, _)
            where serverError.code == .authenticationFailed || serverError.code == .authenticationRequired:
            return SyncError("the server refused the account's token (\(serverError.code.rawValue)); log in again",
                             isAuthenticationFailure: true)
        case let error as RecordClientError: return SyncError(error.description)
        default: return SyncError(String(describing: error))
        }
    }

    func ensureZone() async throws {
        guard try store.setting(SyncSettingKey.zoneReady) == nil else { return }
        try await retryPolicy.waitingOutBusyServer(sleep: sleep) { try await database.createZone(zoneID) }
        try guarded { try store.setSetting(SyncSettingKey.zoneReady, "1") }
    }

    /// The zone is gone on the server: create it again and queue every local record.
    func recreateZone() async throws {
        try await retryPolicy.waitingOutBusyServer(sleep: sleep) { try await database.createZone(zoneID) }
        try guarded {
            try store.resetForRecreatedZone(tokenKey: SyncSettingKey.syncToken, flagKey: SyncSettingKey.refetchInProgress)
            try store.setSetting(SyncSettingKey.zoneReady, "1")
        }
    }
}

/// ISO-8601 with milliseconds, the form every date takes in output and settings.
public enum ISO8601 {
    /// `2026-11-22T07:28:39.229Z`, the text `ISO8601DateFormatter` gives with internet date time
    /// and fractional seconds, composed by hand for the years 1583–9999: creating an ICU date
    /// formatter costs about half a millisecond and first loads ICU, and `match show` and
    /// `match list` made one per match (a fifth of a `match show`, BENCHMARKS.md).
    public static func string(from date: Date) -> String {
        // Milliseconds since 1970, rounded to the nearest with halves up as the formatter rounds
        // them, so that any date prints exactly as it did (checked on 1.8 million random dates).
        let milliseconds = ((date.timeIntervalSinceReferenceDate + 978_307_200) * 1000 + 0.5).rounded(.down)
        guard milliseconds.isFinite, abs(milliseconds) < 1e15 else { return formatter().string(from: date) }
        let total = Int64(milliseconds)
        var days = total / 86_400_000
        var inDay = total % 86_400_000
        if inDay < 0 {
            days -= 1
            inDay += 86_400_000
        }
        let (year, month, day) = civilDate(daysSince1970: days)
        // Before 1583 ICU counts in the Julian calendar; leave those to it.
        guard (1583...9999).contains(year) else { return formatter().string(from: date) }
        var text = ""
        text.reserveCapacity(24)
        func append(_ value: Int64, digits: Int) {
            let figures = String(value)
            text += String(repeating: "0", count: max(0, digits - figures.count)) + figures
        }
        append(year, digits: 4)
        text += "-"
        append(month, digits: 2)
        text += "-"
        append(day, digits: 2)
        text += "T"
        append(inDay / 3_600_000, digits: 2)
        text += ":"
        append(inDay / 60_000 % 60, digits: 2)
        text += ":"
        append(inDay / 1000 % 60, digits: 2)
        text += "."
        append(inDay % 1000, digits: 3)
        text += "Z"
        return text
    }

    /// The proleptic Gregorian (year, month, day) of a day count from 1970-01-01 (Howard
    /// Hinnant's `civil_from_days`).
    static func civilDate(daysSince1970: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = daysSince1970 + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    public static func date(from text: String) -> Date? {
        formatter().date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }

    private static func formatter() -> ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}
