import Dispatch
import RecordClient
import RecordModel

extension ZoneSynchronizer {
    /// Reads the change feed from the stored token until `moreComing` is false, applying and
    /// storing each page as it comes, as `ZoneFetchStateMachine` directs. While one page is
    /// applied, the next ones are already being fetched and decoded (`PageReader`).
    func fetchChanges(_ summary: inout SyncSummary, progress: SyncProgressReporter = SyncProgressReporter(nil),
                      onChange: (AppliedChange) -> Void) async throws
    {
        progress.receiving()
        var machine = ZoneFetchStateMachine(
            syncToken: try store.setting(SyncSettingKey.syncToken),
            refetchInProgress: try store.setting(SyncSettingKey.refetchInProgress) != nil,
            retryPolicy: retryPolicy)
        var action = machine.start()
        var reader: PageReader?
        defer { reader?.stop() }
        // Bounded by the machine, which gives up after its page and retry limits.
        while true {
            switch action {
            case .fetch(let token):
                var read: ZoneChangesPage?
                do {
                    read = try await reader?.page(after: token)
                    if read == nil {
                        // No reader yet, or one elsewhere in the feed (after a retry or a restart).
                        reader?.stop()
                        reader = PageReader(from: token, database: database, zoneID: zoneID)
                        read = try await reader?.page(after: token)
                    }
                } catch let error as RecordClientError {
                    // The reader stops at an error; the machine decides what is fetched next.
                    reader?.stop()
                    reader = nil
                    action = machine.fetchFailed(error)
                    continue
                }
                // A new reader starts at the token asked for.
                guard let page = read else { throw SyncError("the change feed was not read from the token asked for") }
                let applyStarted = DispatchTime.now().uptimeNanoseconds
                let outcome = try store.withRefetchableDurability {
                    try guarded { try store.applyFetchedPage(page, tokenKey: SyncSettingKey.syncToken) }
                }
                let applySeconds = Double(DispatchTime.now().uptimeNanoseconds - applyStarted) / 1e9
                summary.receivedSaved += outcome.savedCount
                summary.sentSaved += outcome.settledSendCount
                summary.receivedDeleted += outcome.deletedCount
                summary.conflicts += outcome.conflicts
                summary.conflictDetails += outcome.conflictDetails
                summary.dropped += outcome.dropped
                outcome.applied.forEach(onChange)
                progress.received(page.changes.count, fetch: page.fetchSeconds, decode: page.decodeSeconds, apply: applySeconds)
                action = machine.pageApplied(syncToken: page.syncToken, moreComing: page.moreComing)
            case .restartFromScratch:
                try guarded {
                    try store.beginRefetchFromScratch(tokenKey: SyncSettingKey.syncToken, flagKey: SyncSettingKey.refetchInProgress)
                }
                action = machine.restartedFromScratch()
            case .recreateZone:
                try await recreateZone()
                action = machine.zoneRecreated()
            case .wait(let seconds):
                try await sleep(seconds)
                action = machine.waited()
            case .finish(let reconcile):
                if reconcile {
                    let deletion = try guarded { try store.finishRefetchFromScratch(flagKey: SyncSettingKey.refetchInProgress) }
                    report(deletion, &summary, onChange: onChange)
                }
                return
            case .fail(let error):
                throw error
            }
        }
    }
}
