#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Ctrl-C: a progress line drawn on a terminal is erased, so the shell's prompt does not land
/// in the middle of it, and the process ends with status 130 (128 + SIGINT), as shells expect.
enum InterruptHandling {
    static func install() {
        signal(SIGINT) { _ in
            // Only async-signal-safe calls here: isatty, write, _exit.
            if isatty(2) == 1 {
                let erase: [UInt8] = [0x0D, 0x1B, 0x5B, 0x4B]  // "\r", then ESC [ K: clear to the line's end
                _ = erase.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count) }
            }
            _exit(130)
        }
    }
}
