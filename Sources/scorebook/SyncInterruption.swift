import Dispatch
import Foundation
import Scorebook
import SyncEngine
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What Ctrl-C on `sync` and `sync --watch` says before the process ends: a sync, what is left
/// to send (the count `status` gives); a watch, the summary the end of `--for` prints.
enum SyncInterruption {
    /// Ctrl-C on `sync`: the progress line erased, one line of what is left, status 130 (128 + SIGINT).
    static func reportWhatIsLeft(storePath: String, progress: ProgressDisplay?) {
        handle([SIGINT]) {
            progress?.stop()
            eraseLine()
            // Counted holding the store's write lock until the process ends: an acknowledgement the
            // sync is about to commit either is in the count or never happens.
            let store = try? LocalRecordStore(path: storePath)
            let left = try? store?.pendingChangesHoldingWritesUntilExit()
            warn(line(left: left))
            Foundation.exit(130)
        }
    }

    /// `interrupted: 3 changes left to send; 'scorebook sync' sends them`.
    static func line(left: Int?) -> String {
        switch left {
        case nil: return "interrupted; 'scorebook sync' sends what is left"
        case 0?: return "interrupted: nothing left to send"
        case 1?: return "interrupted: 1 change left to send; 'scorebook sync' sends it"
        case let count?: return "interrupted: \(count) changes left to send; 'scorebook sync' sends them"
        }
    }

    /// Ctrl-C or SIGTERM on `sync --watch`: the `--for` summary (text only), then status 0:
    /// every change applied so far is committed.
    static func summarizeWatch(_ tally: WatchTally, json: Bool, progress: ProgressDisplay?) {
        handle([SIGINT, SIGTERM]) {
            progress?.stop()
            if !json {
                eraseLine()
                let (saved, deleted) = tally.counts
                emit(Output.watchSummary(seconds: tally.elapsedSeconds, saved: saved, deleted: deleted))
            }
            Foundation.exit(0)
        }
    }

    private static func eraseLine() {
        guard isatty(2) == 1 else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }

    private static func handle(_ signals: [Int32], _ body: @escaping @Sendable () -> Void) {
        for signalNumber in signals {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            // The handler holds its source, so the source lives (and watches) until the process exits.
            source.setEventHandler { [source] in
                _ = source
                body()
            }
            source.resume()
        }
    }
}

/// The changes a watch applied, counted where they are printed and read by the signal handler.
final class WatchTally: Sendable {
    private let counted = Mutex((saved: 0, deleted: 0))
    private let started = Date()

    func count(saved: Bool) {
        counted.withLock { saved ? ($0.saved += 1) : ($0.deleted += 1) }
    }

    var counts: (saved: Int, deleted: Int) { counted.withLock { $0 } }

    /// Whole seconds since the watch started.
    var elapsedSeconds: Double { Date().timeIntervalSince(started).rounded() }
}
