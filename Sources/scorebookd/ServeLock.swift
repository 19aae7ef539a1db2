import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lock that lets one `scorebookd serve` at a time use a data directory: an
/// exclusive `flock` on `scorebookd.lock` in the directory, with the holder's pid written in it
/// for the refusal to name. The kernel drops the lock when the process ends however it ends
/// (kill -9 included), so a crash never leaves a directory locked; the file itself stays.
enum ServeLock {
    static let fileName = "scorebookd.lock"

    /// Why the lock was not taken.
    enum Failure: Error {
        /// Another process holds it; its pid when the file names one.
        case held(pid: Int32?)
        /// The lock file could not be opened (the directory is missing or unwritable).
        case unavailable(String)
    }

    /// Takes the lock of `directory` without waiting. The descriptor is never closed: the lock
    /// lasts as long as the process.
    static func acquire(directory: String) throws {
        let path = (directory as NSString).appendingPathComponent(fileName)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Failure.unavailable(String(cString: strerror(errno))) }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let code = errno
            let holder = readPID(descriptor)
            close(descriptor)
            if code == EWOULDBLOCK { throw Failure.held(pid: holder) }
            throw Failure.unavailable(String(cString: strerror(code)))
        }
        let text = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = text.withCString { pwrite(descriptor, $0, strlen($0), 0) }
    }

    private static func readPID(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
