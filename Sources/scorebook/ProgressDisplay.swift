import Dispatch
import Foundation
import Synchronization
import Scorebook
import SyncEngine

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Draws a sync's `ProgressLine` on standard error, in place with `\r`, redrawn ten times a
/// second (so the spinner turns and the line appears once the delay has passed even while one
/// request is outstanding), and erases it when the sync ends or before anything else is printed.
final class ProgressDisplay: Sendable {
    /// What is on the line, changed only under the lock.
    private struct Screen {
        var progress = SyncProgress()
        var drawn: String?
        var stopped = false

        mutating func erase() {
            guard let drawn else { return }
            ProgressDisplay.put(ProgressLine.erasure(ofLength: drawn.count))
            self.drawn = nil
        }
    }

    private let line: ProgressLine
    private let started = DispatchTime.now()
    private let screen = Mutex(Screen())
    /// The redraw tick; a `Mutex` because dispatch sources are not `Sendable` (held as the class
    /// every source is: a protocol existential could not be sent into the lock).
    private let timer: Mutex<DispatchSource?>

    /// A running display, or nil when progress is not to be shown (see `ProgressLine.configured`).
    static func start() -> ProgressDisplay? {
        guard let line = ProgressLine.configured(environment: ProcessInfo.processInfo.environment,
                                                 standardErrorIsTerminal: isatty(2) == 1)
        else { return nil }
        return ProgressDisplay(line)
    }

    private init(_ line: ProgressLine) {
        self.line = line
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        let source: DispatchSource = timer as! DispatchSource
        self.timer = Mutex(source)
        self.timer.withLock { timer in
            timer?.setEventHandler { [weak self] in self?.redraw() }
            timer?.resume()
        }
    }

    /// The sync's latest counts; its end (`finished`) erases the line for good.
    func update(_ progress: SyncProgress) {
        if progress.finished { return stop() }
        screen.withLock { $0.progress = progress }
        redraw()
    }

    /// Erases the line, runs `body` (which prints), and lets the next tick draw the line again.
    func interrupt(_ body: () -> Void) {
        screen.withLock { $0.erase() }
        body()
    }

    /// Erases the line and draws no more.
    func stop() {
        let stopping = screen.withLock { screen in
            guard !screen.stopped else { return false }
            screen.stopped = true
            screen.erase()
            return true
        }
        guard stopping else { return }
        timer.withLock {
            $0?.cancel()
            $0 = nil
        }
    }

    private func redraw() {
        screen.withLock { screen in
            guard !screen.stopped else { return }
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
            guard let text = line.text(elapsed: elapsed, progress: screen.progress, width: Self.terminalWidth()) else { return screen.erase() }
            guard text != screen.drawn else { return }
            let padding = String(repeating: " ", count: max(0, (screen.drawn?.count ?? 0) - text.count))
            Self.put("\r" + text + padding)
            screen.drawn = text
        }
    }

    fileprivate static func put(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }

    /// Standard error's columns, else `COLUMNS`, else 80.
    private static func terminalWidth() -> Int {
        var size = winsize()
        if ioctl(2, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), columns > 0 { return columns }
        return 80
    }
}
