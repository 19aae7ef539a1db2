import Dispatch
import Foundation
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
final class StoreFileMonitor: @unchecked Sendable {
    private let lock = NSLock()
    private var signalled = false
    private var waiter: CheckedContinuation<Bool, Never>?
    private var descriptor: Int32 = -1
    private var readSource: (any DispatchSourceRead)?
    private var timer: (any DispatchSourceTimer)?
    /// Whether file events (inotify) are watched, rather than only the timer.
    private(set) var watchesFiles = false

    init(storePath: String, backupInterval: Double = 10) {
        let url = URL(fileURLWithPath: storePath)
        let fileName = url.lastPathComponent
        let queue = DispatchQueue(label: "scorebook.store-monitor")
        #if canImport(Glibc)
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if descriptor >= 0 {
            let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE)
            if inotify_add_watch(descriptor, url.deletingLastPathComponent().path, mask) >= 0 {
                let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
                source.setEventHandler { [weak self] in
                    if Self.drainEvents(descriptor, concerning: fileName) { self?.signal() }
                }
                source.setCancelHandler { close(descriptor) }
                source.resume()
                self.descriptor = descriptor
                readSource = source
                watchesFiles = true
            } else {
                close(descriptor)
            }
        }
        #endif
        let interval = watchesFiles ? backupInterval : 0.5
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(Int(interval * 100)))
        timer.setEventHandler { [weak self] in self?.signal() }
        timer.resume()
        self.timer = timer
    }

    deinit {
        readSource?.cancel()
        timer?.cancel()
    }

    /// Waits for the next write to the store's files (or the backup timer); a write since the
    /// last wait returns at once. False when the task is cancelled.
    func nextEvent() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                lock.lock()
                defer { lock.unlock() }
                if Task.isCancelled {
                    continuation.resume(returning: false)
                } else if signalled {
                    signalled = false
                    continuation.resume(returning: true)
                } else {
                    waiter?.resume(returning: false)  // one waiter at a time
                    waiter = continuation
                }
            }
        } onCancel: {
            lock.lock()
            let cancelled = waiter
            waiter = nil
            lock.unlock()
            cancelled?.resume(returning: false)
        }
    }

    private func signal() {
        lock.lock()
        let woken = waiter
        waiter = nil
        if woken == nil { signalled = true }
        lock.unlock()
        woken?.resume(returning: true)
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
