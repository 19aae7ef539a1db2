import Logging
import RecordStore
import ServiceLifecycle

/// Removes tombstones older than the retention period, and notifications older than a week (the
/// contract asks for at least a day), at start-up and then hourly.
package struct TombstonePurger: Service {
    let store: any RecordStorage
    let retentionDays: Int
    let logger: Logger

    package init(store: any RecordStorage, retentionDays: Int, logger: Logger) {
        self.store = store
        self.retentionDays = retentionDays
        self.logger = logger
    }

    static let notificationRetentionMilliseconds: Int64 = 7 * 86_400_000

    package func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                let removed = try await store.purgeTombstones(olderThanMilliseconds: Int64(retentionDays) * 86_400_000)
                if removed > 0 { logger.info("purged \(removed) tombstones older than \(retentionDays) days") }
                _ = try await store.purgeNotifications(olderThanMilliseconds: TombstonePurger.notificationRetentionMilliseconds)
                // Assets no live record refers to go after the tombstone retention; uploads never attached after a day.
                let assets = try await store.sweepAssets(releasedMilliseconds: Int64(retentionDays) * 86_400_000)
                if assets > 0 { logger.info("removed \(assets) assets no record refers to") }
            } catch {
                // A purge cut short by the daemon stopping (a port already in use stops it at
                // once) is not a failure to report: that one line is all a user should see.
                if error is CancellationError || Task.isCancelled { return }
                logger.error("tombstone purge failed: \(error)")
            }
            try? await gracefulShutdownOrSleep(seconds: 3600)
        }
    }
}

/// Sleeps, returning early (by throwing) when the service group starts shutting down.
func gracefulShutdownOrSleep(seconds: Int) async throws {
    try await cancelWhenGracefulShutdown {
        try await Task.sleep(for: .seconds(seconds))
    }
}
