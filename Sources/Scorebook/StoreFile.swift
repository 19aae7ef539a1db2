import Foundation
import SQLiteDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The local store's file is its owner's alone ("created readable by its owner
/// only"): it holds the sync token.
public enum StoreFile {
    /// Creates the store's directory (mode 0700, when it has to) and an empty file at `path`
    /// with mode 0600 when none exists. SQLite then opens the existing file, and gives the
    /// `-wal` and `-shm` files it creates beside it the same mode. An existing file is left as
    /// it is.
    public static func createPrivately(at path: String) throws {
        guard !FileManager.default.fileExists(atPath: path) else { return }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw ScorebookError(.invalidInput, "cannot create the store's directory \(directory): \(error.localizedDescription)")
            }
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if descriptor < 0 {
            let code = errno
            if code == EEXIST { return }  // another process made it just now
            throw ScorebookError(.invalidInput, "cannot create the store \(path): \(String(cString: strerror(code)))")
        }
        close(descriptor)
    }

    /// The tables every scorebook store has.
    static let storeTables: Set<String> = ["records", "server_copies", "outbox"]

    /// Refuses a file at `path` that is not a scorebook store (a text file, or a SQLite database
    /// of something else) with one line naming it, without changing it. A missing or empty file
    /// and an empty database pass: the store is made in them.
    public static func requireScorebookStore(at path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { return }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        try? handle.close()
        guard !header.isEmpty else { return }
        let notAStore = ScorebookError(.invalidInput, "\(path) is not a scorebook store; give another --store")
        guard header == Data("SQLite format 3\0".utf8) else { throw notAStore }
        // A database that cannot be read here is left to opening the store, which says why.
        guard let connection = try? SQLiteConnection(path: path, readOnly: true),
              let tables = try? Set(connection.map("SELECT name FROM sqlite_master WHERE type = 'table'") { $0.text(0) })
        else { return }
        guard tables.isEmpty || storeTables.isSubset(of: tables) else { throw notAStore }
    }
}
