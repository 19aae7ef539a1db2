import ArgumentParser
import Foundation
import Logging
#if PostgreSQL
import PostgresRecordStore
#endif
import RecordModel
import RecordStore
import SQLiteRecordStore

/// STORE, the same for `serve` and every administration command: `--data-dir DIR` (the embedded
/// SQLite store) or `--database URL` (PostgreSQL); without either, env SCOREBOOK_DATABASE_URL,
/// else env SCOREBOOK_DATA_DIR, else `$XDG_DATA_HOME/scorebookd` (`~/.local/share/scorebookd`),
/// so a one-machine install names no store at all.
struct DataDirectoryOption: ParsableArguments {
    @Option(name: .customLong("data-dir"),
            help: "The directory holding the embedded SQLite store (also env SCOREBOOK_DATA_DIR; default $XDG_DATA_HOME/scorebookd, ~/.local/share/scorebookd).")
    var dataDirectoryFlag: String?
    @Option(name: .customLong("database"), help: "A PostgreSQL store: postgres://USER:PASSWORD@HOST:PORT/DATABASE (also env SCOREBOOK_DATABASE_URL).")
    var databaseURL: String?

    static func environment(_ name: String) -> String? {
        let value = ProcessInfo.processInfo.environment[name] ?? ""
        return value.isEmpty ? nil : value
    }

    /// The PostgreSQL store's URL when the command runs on PostgreSQL: `--database`, else
    /// SCOREBOOK_DATABASE_URL unless `--data-dir` is given.
    var postgresURL: String? {
        if let databaseURL { return databaseURL }
        guard dataDirectoryFlag == nil else { return nil }
        return Self.environment("SCOREBOOK_DATABASE_URL")
    }

    /// The SQLite data directory when the command does not run on PostgreSQL ("" when there is
    /// no home directory to find the default in; `validate` refuses that).
    var dataDirectory: String {
        if let dataDirectoryFlag { return dataDirectoryFlag }
        if let fromEnvironment = Self.environment("SCOREBOOK_DATA_DIR") { return fromEnvironment }
        if let dataHome = Self.environment("XDG_DATA_HOME") { return (dataHome as NSString).appendingPathComponent("scorebookd") }
        guard let home = Self.environment("HOME") else { return "" }
        return (home as NSString).appendingPathComponent(".local/share/scorebookd")
    }

    func validate() throws {
        #if !PostgreSQL
        if postgresURL != nil { throw ValidationError(postgreSQLNotBuilt) }
        #endif
        if databaseURL != nil && dataDirectoryFlag != nil { throw ValidationError("give --data-dir or --database, not both") }
        if dataDirectoryFlag == "" { throw ValidationError("--data-dir needs a directory") }
        if postgresURL == nil && dataDirectory.isEmpty { throw ValidationError("give --data-dir DIR or --database URL (there is no HOME for the default)") }
    }

    /// The store's database file in the directory.
    var storeFile: String { (dataDirectory as NSString).appendingPathComponent(SQLiteRecordStore.databaseFileName) }

    /// Opens the store of a data directory that already holds one. Every command but `serve`
    /// uses this: a mistyped path is refused, never made into an empty store that a backup, a
    /// check or a new user would then "succeed" on.
    func openExistingStore() throws -> SQLiteRecordStore {
        try requireExistingStore()
        return try openStore()
    }

    /// Fails with one line naming the directory unless it holds a store.
    func requireExistingStore() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: storeFile, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw CommandFailure(message: "no store in \(dataDirectory): 'scorebookd serve --data-dir \(dataDirectory)' creates one")
        }
    }

    /// Opens the store, creating the directory and the store when missing (for `serve`).
    func openStore(schema: Schema = BuiltinSchema.scorebook) throws -> SQLiteRecordStore {
        do {
            return try SQLiteRecordStore(directory: dataDirectory, schema: schema)
        } catch let error as StoreOpenError {
            throw CommandFailure(message: error.description)
        } catch {
            throw CommandFailure(message: "cannot open the store in \(dataDirectory): \(error)")
        }
    }

    /// Runs `body` on the existing store, whichever backend it is, closes the store, and reports
    /// any failure as one line.
    func withExistingStore<T: Sendable>(_ body: @Sendable (any RecordStorage) async throws -> T) async throws -> T {
        let storage: any RecordStorage
        if let url = postgresURL {
            #if PostgreSQL
            let logger = Logger(label: "scorebookd.admin", factory: { _ in SwiftLogNoOpLogHandler() })
            storage = try await PostgresAdministration.open(url: url, create: false, logger: logger)
            #else
            _ = url
            throw CommandFailure(message: postgreSQLNotBuilt)
            #endif
        } else {
            storage = SQLiteStorage(try openExistingStore())
        }
        do {
            let value = try await body(storage)
            await storage.close()
            return value
        } catch {
            await storage.close()
            throw CommandFailure(describing: error)
        }
    }
}

extension CommandFailure {
    /// A store's or the command's error as the one line the user sees.
    init(describing error: any Error) {
        switch error {
        case let failure as CommandFailure: self = failure
        case let error as ServerError: self.init(message: error.reason)
        case let error as StoreOpenError: self.init(message: error.description)
        default: self.init(message: "\(error)")
        }
    }
}
