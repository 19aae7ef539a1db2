import PostgresNIO
import RecordModel
import RecordStore

/// PostgreSQL's failures as the store answers them.
enum PostgresFailure {
    /// PostgreSQL unreachable, restarting, or a statement or lock past its timeout: transient.
    static func map<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ServerError {
            throw error
        } catch let error as any ScriptSignal {
            throw error
        } catch let error as PSQLError {
            if error.code == .server {
                let state = error.serverInfo?[.sqlState] ?? ""
                // 57014 statement timeout, 55P03 lock timeout, 40001/40P01 serialization or
                // deadlock, 57P0x shutdown, 53300 too many connections, 08xxx connection.
                if ["57014", "55P03", "40001", "40P01", "57P01", "57P02", "57P03", "53300", "53400"].contains(state)
                    || state.hasPrefix("08")
                {
                    throw ServerError(.tryAgainLater, "the database is busy or restarting; try again", retryAfter: 1)
                }
                throw error
            }
            throw ServerError(.tryAgainLater, "the database is unreachable; try again", retryAfter: 2)
        } catch is CancellationError {
            throw ServerError(.tryAgainLater, "the database did not answer in time; try again", retryAfter: 2)
        } catch let error as StoreMissingError {
            throw error
        } catch let error as MigrationRefused {
            throw error
        } catch {
            // Connection failures that postgres-nio reports with NIO's own errors.
            throw ServerError(.tryAgainLater, "the database is unreachable; try again", retryAfter: 2)
        }
    }
}
