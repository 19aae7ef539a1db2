import ArgumentParser
import Foundation
import Logging
#if PostgreSQL
import PostgresRecordStore
#endif
import RecordModel
import RecordStore
import SQLiteRecordStore

/// `scorebookd migrate --from-data-dir DIR --database URL`: copies an SQLite store
/// into an empty PostgreSQL database. Ids, sequences, token hashes and the store's identity are
/// kept, so users' tokens, clients' sync tokens and notification cursors keep working.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Copy an SQLite store (--from-data-dir) into an empty PostgreSQL database.")

    @Option(name: .customLong("from-data-dir"), help: "The data directory of the SQLite store to copy (stop its daemon first).")
    var dataDirectory: String
    @Option(name: .customLong("database"), help: "The PostgreSQL database: postgres://USER:PASSWORD@HOST:PORT/DATABASE.")
    var databaseURL: String

    func run() async throws {
        #if PostgreSQL
        let file = (dataDirectory as NSString).appendingPathComponent(SQLiteRecordStore.databaseFileName)
        guard FileManager.default.fileExists(atPath: file) else { throw CommandFailure(message: "\(dataDirectory) holds no scorebook store") }
        let source: SQLiteRecordStore
        do {
            source = try SQLiteRecordStore(directory: dataDirectory)
        } catch {
            throw CommandFailure(message: "cannot open the store in \(dataDirectory): \(error)")
        }
        defer { source.close() }
        let tables: [ExportedTable]
        do {
            tables = try await SQLiteStorage(source).engine.exportTables()
        } catch {
            throw CommandFailure(describing: error)
        }
        let logger = Logger(label: "scorebookd.migrate", factory: { _ in SwiftLogNoOpLogHandler() })
        let target = try await PostgresAdministration.open(url: databaseURL, create: true, logger: logger)
        // The assets' bytes follow the tables, one asset per transaction (each at most 50 MB).
        let assetFiles = (tables.first { $0.name == "asset_blobs" }?.rows ?? []).compactMap { row -> (String, String, String)? in
            guard case .text(let scope) = row[0], case .text(let checksum) = row[1] else { return nil }
            return (scope, checksum, source.assetFilePath(scopeKey: scope, checksum: checksum))
        }
        try await PostgresAdministration.run(target) { store in
            try await store.importTables(tables, storeID: source.storeID)
            for (scope, checksum, path) in assetFiles { try await store.importAssetFile(scopeKey: scope, checksum: checksum, path: path) }
        }
        var counts: [String: JSONValue] = [:]
        for table in tables where ["users", "zones", "records", "subscriptions", "notifications", "asset_blobs"].contains(table.name) {
            counts[table.name] = .int(Int64(table.rows.count))
        }
        printJSON(["migrated": .object(counts)])
        #else
        throw CommandFailure(message: postgreSQLNotBuilt)
        #endif
    }
}
