import Foundation
import Logging
import PostgresNIO
import RecordModel
import RecordStore

/// The PostgreSQL store: the engine's `RecordStorage` on a PostgreSQL 15 database that any
/// number of daemons share (`PostgresBackend`).
package typealias PostgresRecordStore = EngineStore<PostgresBackend>

extension EngineStore where Backend == PostgresBackend {
    /// Connects to the database at `url` and creates the store's tables when they do not exist
    /// (`create` false: refuses a database that holds no store).
    package static func open(url: String, create: Bool = true, schema: Schema = BuiltinSchema.scorebook, openDeadline: Duration = .seconds(30),
                             clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) },
                             logger: Logger = Logger(label: "scorebookd.postgres")) async throws -> PostgresRecordStore
    {
        EngineStore(try await PostgresBackend.open(url: url, create: create, schema: schema, openDeadline: openDeadline, clock: clock,
                                                   logger: logger))
    }

    /// Parses `postgres://USER:PASS@HOST:PORT/DB` (`PostgresBackend.configuration`).
    package static func configuration(url: String) throws -> PostgresClient.Configuration { try PostgresBackend.configuration(url: url) }

    /// The store's connections as the engine's driver.
    package var driver: PostgresStoreDriver { backend.driver }

    /// `migrate`: copies an exported SQLite store into this empty database (`PostgresBackend.importTables`).
    package func importTables(_ tables: [ExportedTable], storeID: String) async throws {
        try await backend.importTables(tables, storeID: storeID)
    }

    /// `migrate`: the bytes of an asset whose bookkeeping was imported, from the SQLite store's file.
    package func importAssetFile(scopeKey: String, checksum: String, path: String) async throws {
        try await backend.importAssetFile(scopeKey: scopeKey, checksum: checksum, path: path)
    }
}
