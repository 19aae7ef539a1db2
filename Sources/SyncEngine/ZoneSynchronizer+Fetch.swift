import Dispatch
import RecordClient
import RecordModel

extension ZoneSynchronizer {
    /// Reads the change feed from the stored token until `moreComing` is false, applying and
    /// storing each page as it comes, as `ZoneFetchStateMachine` directs. While one page is
    /// applied, the next is already being fetched and parsed: on a first sync of a big book the
    /// server's answer and the local writes take turns otherwise.
    func fetchChanges(_ summary: inout SyncSummary, progress: SyncProgressReporter = SyncProgressReporter(nil),
                      onChange: (AppliedChange) -> Void) async throws
    {
        progress.receiving()
        var machine = ZoneFetchStateMachine(
            syncToken: try store.setting(SyncSettingKey.syncToken),
            refetchInProgress: try store.setting(SyncSettingKey.refetchInProgress) != nil,
            retryPolicy: retryPolicy)
        var action = machine.start()
        var prefetch: PageFetch?
        defer { prefetch?.task.cancel() }
        // Bounded by the machine, which gives up after its page and retry limits.
        while true {
            switch action {
            case .fetch(let token):
                let page: ZoneChangesPage
                do {
                    if let ahead = prefetch, ahead.token == token {
                        prefetch = nil
                        page = try await ahead.task.value
                    } else {
                        prefetch?.task.cancel()
                        prefetch = nil
                        page = try await database.fetchZoneChanges(zoneID: zoneID, syncToken: token, resultsLimit: nil)
                    }
                } catch let error as RecordClientError {
                    action = machine.fetchFailed(error)
                    continue
                }
                if page.moreComing { prefetch = PageFetch(after: page.syncToken, from: database, zoneID: zoneID) }
                let applyStarted = DispatchTime.now().uptimeNanoseconds
                let outcome = try store.withRefetchableDurability {
                    try guarded { try store.applyFetchedPage(page, tokenKey: SyncSettingKey.syncToken) }
                }
                let applySeconds = Double(DispatchTime.now().uptimeNanoseconds - applyStarted) / 1e9
                summary.receivedSaved += outcome.savedCount
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

/// The fetch of the change feed's page after `token`, running while the page before is applied.
private struct PageFetch {
    let token: String
    let task: Task<ZoneChangesPage, Error>

    init(after token: String, from database: any CloudDatabase, zoneID: ZoneID) {
        self.token = token
        task = Task { try await database.fetchZoneChanges(zoneID: zoneID, syncToken: token, resultsLimit: nil) }
    }
}
