import RecordClient
import RecordModel

extension ZoneSynchronizer {
    /// Reads the change feed from the stored token until `moreComing` is false, applying and
    /// storing each page as it comes, as `ZoneFetchStateMachine` directs.
    func fetchChanges(_ summary: inout SyncSummary, progress: SyncProgressReporter = SyncProgressReporter(nil),
                      onChange: (AppliedChange) -> Void) async throws
    {
        progress.receiving()
        var machine = ZoneFetchStateMachine(
            syncToken: try store.setting(SyncSettingKey.syncToken),
            refetchInProgress: try store.setting(SyncSettingKey.refetchInProgress) != nil,
            retryPolicy: retryPolicy)
        var action = machine.start()
        // Bounded by the machine, which gives up after its page and retry limits.
        while true {
            switch action {
            case .fetch(let token):
                let page: ZoneChangesPage
                do {
                    page = try await database.fetchZoneChanges(zoneID: zoneID, syncToken: token, resultsLimit: nil)
                } catch let error as RecordClientError {
                    action = machine.fetchFailed(error)
                    continue
                }
                let outcome = try guarded { try store.applyFetchedPage(page, tokenKey: SyncSettingKey.syncToken) }
                summary.receivedSaved += outcome.savedCount
                summary.receivedDeleted += outcome.deletedCount
                summary.conflicts += outcome.conflicts
                summary.conflictDetails += outcome.conflictDetails
                summary.dropped += outcome.dropped
                outcome.applied.forEach(onChange)
                progress.received(page.changes.count)
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
