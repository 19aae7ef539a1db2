import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Wakes a waiter when the files of a SQLite store (the database and its WAL) are written, by
/// this process or any other: inotify on the store's folder, read through a dispatch source, so
/// an idle `sync --watch` sleeps in the kernel instead of polling. A slow timer backs it up
/// (every `backupInterval` seconds; every half second where inotify is not to be had).
///
/// A wake-up says only that something was written; the caller asks SQLite what changed
/// (`LocalRecordStore.dataVersion()`), which also tells other processes' commits from its own.
final class StoreFileMonitor: Sendable {
    /// What the dispatch handlers touch: they hold it rather than the monitor, so the monitor
    /// (and with it the sources) goes away when its owner lets go.
    private final class Wakeups: Sendable {
        private struct State {
            var signalled = false
            var waiter: CheckedContinuation<Bool, Never>?
        }

        private let state = Mutex(State())

        /// Parks `continuation` until the next signal, or answers it at once if one came since the last wait.
        func wait(_ continuation: CheckedContinuation<Bool, Never>) {
            let (answerNow, displaced) = state.withLock { state -> (Bool?, CheckedContinuation<Bool, Never>?) in
                if Task.isCancelled { return (false, nil) }
                if state.signalled {
                    state.signalled = false
                    return (true, nil)
                }
                defer { state.waiter = continuation }
                return (nil, state.waiter)  // one waiter at a time
            }
            displaced?.resume(returning: false)
            if let answerNow { continuation.resume(returning: answerNow) }
        }

        func cancel() {
            let cancelled = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            cancelled?.resume(returning: false)
        }

        func signal() {
            let woken = state.withLock { state in
                defer { state.waiter = nil }
                if state.waiter == nil { state.signalled = true }
                return state.waiter
            }
            woken?.resume(returning: true)
        }
    }

    private let wakeups: Wakeups
    /// The inotify read source (if any) and the backup timer, cancelled with the monitor; a
    /// `Mutex` because dispatch sources are not `Sendable`. Held as the class every source is
    /// (a protocol existential could carry an isolated conformance, so it could not be sent in).
    private let sources: Mutex<[DispatchSource]>
    /// Whether file events (inotify) are watched, rather than only the timer.
    let watchesFiles: Bool

    init(storePath: String, backupInterval: Double = 10) {
        let url = URL(fileURLWithPath: storePath)
        let fileName = url.lastPathComponent
        let queue = DispatchQueue(label: "scorebook.store-monitor")
        let wakeups = Wakeups()
        self.wakeups = wakeups
        var sources: [DispatchSource] = []
        var watchesFiles = false
        #if canImport(Glibc)
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if descriptor >= 0 {
            let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE)
            if inotify_add_watch(descriptor, url.deletingLastPathComponent().path, mask) >= 0 {
                let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
                source.setEventHandler {
                    if Self.drainEvents(descriptor, concerning: fileName) { wakeups.signal() }
                }
                source.setCancelHandler { close(descriptor) }
                source.resume()
                sources.append(source as! DispatchSource)
                watchesFiles = true
            } else {
                close(descriptor)
            }
        }
        #endif
        let interval = watchesFiles ? backupInterval : 0.5
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(Int(interval * 100)))
        timer.setEventHandler { wakeups.signal() }
        timer.resume()
        sources.append(timer as! DispatchSource)
        self.sources = Mutex(sources)
        self.watchesFiles = watchesFiles
    }

    deinit {
        sources.withLock { for source in $0 { source.cancel() } }
    }

    /// Waits for the next write to the store's files (or the backup timer); a write since the
    /// last wait returns at once. False when the task is cancelled.
    func nextEvent() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { wakeups.wait($0) }
        } onCancel: {
            wakeups.cancel()
        }
    }

    #if canImport(Glibc)
    /// Reads every pending inotify event; true if one concerns the store's files
    /// (`NAME`, `NAME-wal`, `NAME-journal`).
    private static func drainEvents(_ descriptor: Int32, concerning fileName: String) -> Bool {
        var concerned = false
        let capacity = 4096
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer, capacity)
            guard count > 0 else { break }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameLength = Int(event.len)
                if nameLength > 0 {
                    let namePointer = (buffer + offset + MemoryLayout<inotify_event>.size).assumingMemoryBound(to: CChar.self)
                    let name = String(cString: namePointer)
                    if name == fileName || name.hasPrefix(fileName + "-") { concerned = true }
                }
                offset += MemoryLayout<inotify_event>.size + nameLength
            }
        }
        return concerned
    }
    #endif
}
