#if PostgreSQL
import ArgumentParser
import Foundation
import Logging
import PostgresRecordStore
import RecordModel
import RecordStore

/// Opening a PostgreSQL store for `serve`, `migrate` and the administrative commands
/// (`DataDirectoryOption.withExistingStore`). The commands work while daemons serve the same
/// database: each is one transaction. Every command other than `serve` refuses a database that
/// holds no store.
enum PostgresAdministration {
    /// Opens the store, turning every failure into one line.
    static func open(url: String, create: Bool, schema: Schema = BuiltinSchema.scorebook, logger: Logger) async throws
        -> PostgresRecordStore
    {
        do {
            return try await PostgresRecordStore.open(url: url, create: create, schema: schema, logger: logger)
        } catch let error as ServerError {
            throw CommandFailure(message: error.reason)
        } catch {
            throw CommandFailure(message: "\(error)")
        }
    }

    /// Runs one store call, closes the store, and reports a failure as one line.
    static func run<T: Sendable>(_ store: PostgresRecordStore, _ body: (PostgresRecordStore) async throws -> T) async throws -> T {
        do {
            let value = try await body(store)
            await store.close()
            return value
        } catch let error as ServerError {
            await store.close()
            throw CommandFailure(message: error.reason)
        } catch {
            await store.close()
            throw CommandFailure(message: "\(error)")
        }
    }
}
#endif
