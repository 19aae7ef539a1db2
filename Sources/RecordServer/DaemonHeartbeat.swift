import Foundation
import Logging
import RecordStore
import ServiceLifecycle

/// Every few seconds, tells the store this daemon is alive and shares the per-user rate limit
/// among the daemons serving the same store (PostgreSQL; an embedded store always counts one).
package struct DaemonHeartbeat: Service {
    let api: RecordAPI
    let logger: Logger
    let daemonID = UUID().uuidString.lowercased()
    static let intervalSeconds = 5

    package init(api: RecordAPI, logger: Logger) {
        self.api = api
        self.logger = logger
    }

    package func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                let daemons = try await api.store.liveDaemonCount(heartbeatFrom: daemonID)
                api.rateLimiter.share(among: daemons)
            } catch {
                logger.debug("daemon heartbeat failed: \(error)")
            }
            try? await gracefulShutdownOrSleep(seconds: DaemonHeartbeat.intervalSeconds)
        }
    }
}
