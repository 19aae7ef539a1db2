import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A pseudo-terminal: what a program writes to `replica` is read from the main side.
final class PseudoTerminal {
    let main: Int32
    let replica: FileHandle
    private var seen = ""

    init() throws {
        // posix_openpt and friends are not visible to Swift here; these are their Linux insides
        // (the ioctl numbers TIOCSPTLCK and TIOCGPTN, whose C macros Swift cannot import).
        main = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard main >= 0, ioctl(main, 0x4004_5431, &unlock) == 0, ioctl(main, 0x8004_5430, &number) == 0 else {
            throw DaemonError("no pseudo-terminal")
        }
        let descriptor = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        guard descriptor >= 0 else { throw DaemonError("cannot open /dev/pts/\(number)") }
        replica = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    deinit { close(main) }

    /// Types `text` on the terminal's keyboard.
    func type(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBufferPointer { write(main, $0.baseAddress, $0.count) }
    }

    /// Everything read so far, reading on until it contains `text` or `timeout` passes.
    func read(until text: String, timeout: TimeInterval) -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !seen.contains(text), Date() < deadline {
            var poller = pollfd(fd: main, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let count = Glibc.read(main, &buffer, buffer.count)
            guard count > 0 else { break }
            seen += String(decoding: buffer[..<count], as: UTF8.self)
        }
        return seen
    }
}
