import Dispatch
import Foundation
import Logging
import Synchronization

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
    /// Whether a signal started the countdown (only the first one does).
    private static let counting = Atomic<Bool>(false)

    /// Starts watching SIGTERM and SIGINT (the service group keeps handling them too).
    static func arm(graceSeconds: Int, logger: Logger) {
        queue.sync {
            for signalNumber in [SIGTERM, SIGINT] {
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
                // The handler holds its source, so the source lives (and watches) until the process exits.
                source.setEventHandler { [source] in
                    _ = source
                    started(graceSeconds: graceSeconds, logger: logger)
                }
                source.resume()
            }
        }
    }

    /// On the watchdog's queue: the first signal starts the countdown.
    private static func started(graceSeconds: Int, logger: Logger) {
        guard counting.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        queue.asyncAfter(deadline: .now() + .milliseconds(graceSeconds * 1000 + 500)) {
            logger.warning("shutdown grace of \(graceSeconds) s is over with work still running; exiting now")
            fflush(nil)  // every output stream
            _exit(0)
        }
    }
}
