#if PostgreSQL
import ArgumentParser
import Foundation
import Logging
import PostgresRecordStore
import RecordModel
import RecordStore

/// The administrative commands on a PostgreSQL store (`--database URL` or SCOREBOOK_DATABASE_URL,
/// CONTRACT §2 and §6). They work while daemons serve the same database: each is one transaction.
/// Every command other than `serve` refuses a database that holds no store.
enum PostgresAdministration {
    /// Runs `command` on PostgreSQL when it names a PostgreSQL store; false when it does not.
    static func runIfPostgres(_ command: any ParsableCommand) async throws -> Bool {
        let logger = Logger(label: "scorebookd.admin", factory: { _ in SwiftLogNoOpLogHandler() })
        switch command {
        case let create as UserCommand.Create:
            guard let url = create.data.postgresURL else { return false }
            let store = try await open(url: url, create: false, logger: logger)
            let (user, token) = try await run(store) { try await $0.createUser(name: create.name, email: create.email) }
            printJSON(["userRecordName": .string(user.recordName), "name": .string(user.name), "token": .string(token)])
        case let token as UserCommand.Token:
            guard let url = token.data.postgresURL else { return false }
            let store = try await open(url: url, create: false, logger: logger)
            let (user, issued) = try await run(store) { try await $0.issueToken(userName: token.name) }
            printJSON(["userRecordName": .string(user.recordName), "name": .string(user.name), "token": .string(issued)])
        case let revoke as UserCommand.Revoke:
            guard let url = revoke.data.postgresURL else { return false }
            let store = try await open(url: url, create: false, logger: logger)
            let (user, revoked) = try await run(store) { try await $0.revokeTokens(userName: revoke.name, token: revoke.token) }
            printJSON(["userRecordName": .string(user.recordName), "name": .string(user.name), "revoked": .int(Int64(revoked))])
        case let list as UserCommand.List:
            guard let url = list.data.postgresURL else { return false }
            let store = try await open(url: url, create: false, logger: logger)
            for user in try await run(store, { try await $0.listUsers() }) {
                printJSON(["userRecordName": .string(user.recordName), "name": .string(user.name)])
            }
        case let create as APITokenCommand.Create:
            guard let url = create.data.postgresURL else { return false }
            let store = try await open(url: url, create: false, logger: logger)
            printJSON(["apiToken": .string(try await run(store) { try await $0.createAPIToken() })])
        case let add as KeyCommand.Add:
            guard let url = add.data.postgresURL else { return false }
            let pem = try add.readPEM()
            let store = try await open(url: url, create: false, logger: logger)
            printJSON(["keyID": .string(try await run(store) { try await $0.addServerKey(pem: pem, name: add.name) })])
        case let check as Check:
            guard let url = check.data.postgresURL else { return false }
            let store = try await open(url: url, create: false, logger: logger)
            let problems = try await run(store) { try await $0.checkIntegrity() }
            printJSON(["ok": .bool(problems.isEmpty), "problems": .array(problems.map { .string($0) })])
            if !problems.isEmpty { throw ExitCode(1) }
        case let backup as Backup:
            guard backup.data.postgresURL != nil else { return false }
            throw CommandFailure(message: "backup works on --data-dir only; back up PostgreSQL with pg_dump")
        default:
            return false
        }
        return true
    }

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
