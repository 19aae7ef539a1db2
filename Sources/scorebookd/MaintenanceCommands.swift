import ArgumentParser
import Foundation
import RecordModel
import RecordStore
import SQLiteRecordStore

/// Store errors become plain one-line failures.
func wrap<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw CommandFailure(describing: error)
    }
}

/// The one line of `backup` and `restore` on PostgreSQL, which has its own tools for both.
let postgresBackupAdvice = "backup and restore work on --data-dir only; on PostgreSQL use pg_dump and pg_restore"

struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a consistent copy of the store, also while it serves.",
        discussion: "The copy is FILE (readable by its owner only) with the assets in FILE.assets/ beside it; `scorebookd restore --from FILE` puts both back.")
    @OptionGroup var data: DataDirectoryOption
    @Option(name: .customLong("to"), help: "The file to write (must not exist).") var destination: String

    func run() throws {
        guard data.postgresURL == nil else { throw CommandFailure(message: postgresBackupAdvice) }
        try Self.requireWritableDestination(destination)
        let store = try data.openExistingStore()
        defer { store.close() }
        try wrap { try store.backup(to: destination) }
        printJSON(["backup": .string(destination)])
    }
}

extension Backup {
    /// Says in words, before SQLite would in its own, why the backup cannot be written there.
    static func requireWritableDestination(_ destination: String) throws {
        let parent = (destination as NSString).deletingLastPathComponent
        let directory = parent.isEmpty ? "." : parent
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CommandFailure(message: "cannot write the backup to \(destination): there is no directory \(directory)")
        }
        guard FileManager.default.isWritableFile(atPath: directory) else {
            throw CommandFailure(message: "cannot write the backup to \(destination): the directory \(directory) is not writable")
        }
        if FileManager.default.fileExists(atPath: destination) {
            throw CommandFailure(message: "cannot write the backup to \(destination): the file exists already")
        }
    }
}

struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restore a backup (and its FILE.assets/) into an empty data directory.",
        discussion: "A data directory that holds a store with any user, API token or data is refused, and so is one a daemon serves.")
    @OptionGroup var data: DataDirectoryOption
    @Option(name: .customLong("from"), help: "The backup file `scorebookd backup --to` wrote.") var source: String

    func run() throws {
        guard data.postgresURL == nil else { throw CommandFailure(message: postgresBackupAdvice) }
        let directory = data.dataDirectory
        // The lock `serve` takes: no daemon may serve the directory while its store is replaced.
        if FileManager.default.fileExists(atPath: directory) {
            do {
                try ServeLock.acquire(directory: directory)
            } catch ServeLock.Failure.held(let pid) {
                throw CommandFailure(message: "data directory \(directory) is being served by " + (pid.map { "scorebookd pid \($0)" } ?? "a scorebookd")
                    + "; stop it first")
            } catch {
                throw CommandFailure(message: "cannot lock data directory \(directory): \(error)")
            }
        }
        try wrap { try SQLiteRecordStore.restore(backup: source, into: directory) }
        printJSON(["restored": .string(source), "dataDirectory": .string(directory)])
    }
}

struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Verify a store's integrity; exit 1 if anything is wrong.")
    @OptionGroup var data: DataDirectoryOption

    /// A store that cannot be opened or read is a problem to report like any other, in the
    /// same JSON, not an SQL error.
    func run() async throws {
        var problems: [String]
        if data.postgresURL != nil {
            problems = try await data.withExistingStore { try await $0.checkIntegrity() }
        } else {
            try data.requireExistingStore()
            do {
                let store = try data.openStore()
                defer { store.close() }
                problems = try await SQLiteStorage(store).checkIntegrity()
            } catch {
                let reason = (error as? CommandFailure)?.message ?? "\(error)"
                problems = ["the store cannot be read: " + (reason.split(separator: "\n").first.map(String.init) ?? reason)]
            }
        }
        printJSON(["ok": .bool(problems.isEmpty), "problems": .array(problems.map { .string($0) })])
        if !problems.isEmpty { throw ExitCode(1) }
    }
}
