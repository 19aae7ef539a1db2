import Foundation
import RecordModel
import SyncEngine

#if canImport(Glibc)
import Glibc
#endif

/// What `sync` does for those who measure or test it, set by environment variables:
/// `SCOREBOOK_SYNC_TIMINGS=1` prints, on standard error at the end, one JSON line of where the
/// receiving time went (`fetchSeconds`, `decodeSeconds`, `applySeconds`, `pages`, `received`),
/// and `SCOREBOOK_SYNC_TIMINGS=FILE` appends it to FILE instead (for a caller that measures
/// the process and so cannot read its standard error);
/// `SCOREBOOK_SYNC_STOP_AFTER_PAGES=N` kills the process (SIGKILL, as a power cut or `kill -9`
/// would) once N pages of the change feed are applied, to try resuming.
final class SyncPhaseReport {
    private let printsTimings: Bool
    /// Where the timings line goes instead of standard error.
    private let timingsFile: String?
    private let stopAfterPages: Int?
    /// Figures of the books whose sync ended; `current` is the book being synced.
    private var ended = SyncProgress()
    private var current = SyncProgress()

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let timings = environment["SCOREBOOK_SYNC_TIMINGS"] ?? ""
        printsTimings = !["", "0"].contains(timings)
        timingsFile = printsTimings && timings != "1" ? timings : nil
        stopAfterPages = environment["SCOREBOOK_SYNC_STOP_AFTER_PAGES"].flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil }
    }

    var isActive: Bool { printsTimings || stopAfterPages != nil }

    /// Hears every progress report of the sync (each book's ends with `finished`).
    func update(_ progress: SyncProgress) {
        current = progress
        if let stopAfterPages, ended.pagesReceived + progress.pagesReceived >= stopAfterPages {
            // Reported after the page's commit: everything up to it is in the store.
            kill(getpid(), SIGKILL)
        }
        guard progress.finished else { return }
        ended.pagesReceived += progress.pagesReceived
        ended.received += progress.received
        ended.fetchSeconds += progress.fetchSeconds
        ended.decodeSeconds += progress.decodeSeconds
        ended.applySeconds += progress.applySeconds
        current = SyncProgress()
    }

    /// Prints the timings line, if asked for.
    func finish() {
        guard printsTimings else { return }
        let pages = ended.pagesReceived + current.pagesReceived
        let line: JSONValue = [
            "fetchSeconds": .double(ended.fetchSeconds + current.fetchSeconds),
            "decodeSeconds": .double(ended.decodeSeconds + current.decodeSeconds),
            "applySeconds": .double(ended.applySeconds + current.applySeconds),
            "pages": .int(Int64(pages)),
            "received": .int(Int64(ended.received + current.received)),
        ]
        guard let timingsFile else { return warn(line.serializedString()) }
        guard let file = FileHandle(forWritingAtPath: timingsFile) ?? createFile(timingsFile) else {
            return warn("warning: cannot write the sync timings to \(timingsFile)")
        }
        file.seekToEndOfFile()
        file.write(Data((line.serializedString() + "\n").utf8))
        file.closeFile()
    }

    private func createFile(_ path: String) -> FileHandle? {
        _ = FileManager.default.createFile(atPath: path, contents: nil)  // the open below says if it failed
        return FileHandle(forWritingAtPath: path)
    }
}
