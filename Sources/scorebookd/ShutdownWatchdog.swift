import Dispatch
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Ends the process when a graceful shutdown overruns its grace.
///
/// The service group lets in-flight requests finish for the grace, then cancels them; but work
/// that does not honour cancellation (a connection a client keeps half-sent, a store call on a
/// hung database) would keep the process up until a service manager kills it. This watches for
/// the same signals on its own and exits with status 0 half a second after the grace: every
/// acknowledged write is already committed, and what was still running had not been answered.
enum ShutdownWatchdog {
    private static let queue = DispatchQueue(label: "scorebookd.shutdown-watchdog")
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    nonisolated(unsafe) private static var armedAt: DispatchTime?

    /// Starts watching SIGTERM and SIGINT (the service group keeps handling them too).
    static func arm(graceSeconds: Int, logger: Logger) {
        queue.sync {
            for signalNumber in [SIGTERM, SIGINT] {
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
                source.setEventHandler { started(graceSeconds: graceSeconds, logger: logger) }
                source.resume()
                sources.append(source)
            }
        }
    }

    /// On the watchdog's queue: the first signal starts the countdown.
    private static func started(graceSeconds: Int, logger: Logger) {
        guard armedAt == nil else { return }
        armedAt = .now()
        queue.asyncAfter(deadline: .now() + .milliseconds(graceSeconds * 1000 + 500)) {
            logger.warning("shutdown grace of \(graceSeconds) s is over with work still running; exiting now")
            fflush(stdout)
            fflush(stderr)
            _exit(0)
        }
    }
}
