import ArgumentParser
import Foundation
import RecordModel
import RecordStore

/// `scorebookd user …`: users and their tokens, on either backend, whether or not a daemon serves
/// the store (each command is one transaction).
struct UserCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Manage users.",
        subcommands: [Create.self, Token.self, Revoke.self, List.self, Edit.self, Delete.self, Password.self])

    /// `--expires-in DAYS`: when a new token stops working.
    struct Expiry: ParsableArguments {
        @Option(name: .customLong("expires-in"), help: "Days until the token stops working (fractions allowed); default: never.")
        var days: Double?

        func validate() throws {
            if let days, !(days > 0 && days <= 36_500) { throw ValidationError("--expires-in must be more than 0 and at most 36500 days") }
        }

        /// Milliseconds since 1970 when the token expires, or nil.
        var expiresAt: Int64? {
            days.map { Int64(Date().timeIntervalSince1970 * 1000) + Int64(($0 * 86_400_000).rounded()) }
        }
    }

    static func printToken(_ user: User, _ token: String) {
        printJSON(["userRecordName": .string(user.recordName), "name": .string(user.name), "token": .string(token)])
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a user and print its first token.")
        @Argument(help: "The user's name.") var name: String
        @Option(help: "The user's email address: how others share scorebooks with it.") var email: String?
        @OptionGroup var expiry: Expiry
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            let (name, email, expiresAt) = (name, email, expiry.expiresAt)
            let (user, token) = try await data.withExistingStore { try await $0.createUser(name: name, email: email, tokenExpiresAt: expiresAt) }
            UserCommand.printToken(user, token)
        }
    }

    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a new token for an existing user.")
        @Argument(help: "The user's name.") var name: String
        @OptionGroup var expiry: Expiry
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            let (name, expiresAt) = (name, expiry.expiresAt)
            let (user, token) = try await data.withExistingStore { try await $0.issueToken(userName: name, expiresAt: expiresAt) }
            UserCommand.printToken(user, token)
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke one token of a user (--token), or every token of the user.",
            discussion: "A revoked token is refused (401 AUTHENTICATION_FAILED) from the next request on, also by a daemon serving the store now.")
        @Argument(help: "The user's name.") var name: String
        @Option(help: "The token to revoke; without it, every token of the user.") var token: String?
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            let (name, token) = (name, token)
            let (user, revoked) = try await data.withExistingStore { try await $0.revokeTokens(userName: name, token: token) }
            printJSON(["userRecordName": .string(user.recordName), "name": .string(user.name), "revoked": .int(Int64(revoked))])
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List users: NAME, EMAIL, LIVE TOKENS (neither revoked nor expired), LAST USED.",
            discussion: "LAST USED is the latest use of any of the user's tokens, in UTC, recorded at most once a minute per token.")
        @Flag(help: "Print a JSON array of {userRecordName, name, email, liveTokens, lastUsed} instead of a table.") var json = false
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            let users = try await data.withExistingStore { try await $0.userSummaries() }
            if json {
                printJSONArray(users.map { summary in
                    ["userRecordName": .string(summary.user.recordName), "name": .string(summary.user.name),
                     "email": summary.email.map { .string($0) } ?? .null, "liveTokens": .int(Int64(summary.liveTokens)),
                     "lastUsed": summary.lastUsed.map { .string(List.timestamp($0)) } ?? .null]
                })
                return
            }
            let rows = [["NAME", "EMAIL", "LIVE TOKENS", "LAST USED"]] + users.map {
                [$0.user.name, $0.email ?? "-", String($0.liveTokens), $0.lastUsed.map(List.timestamp) ?? "never"]
            }
            let widths = (0..<3).map { column in rows.map { $0[column].count }.max() ?? 0 }
            for row in rows {
                let padded = (0..<3).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                print((padded + [row[3]]).joined(separator: "  "))
            }
        }

        /// `2026-11-27T03:12:45Z`.
        static func timestamp(_ milliseconds: Int64) -> String {
            let formatter = ISO8601DateFormatter()
            formatter.timeZone = TimeZone(identifier: "UTC")
            return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        }
    }

    struct Edit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a user's email address (how others share scorebooks with it).")
        @Argument(help: "The user's name.") var name: String
        @Option(help: "The new email address.") var email: String
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            let (name, email) = (name, email)
            let summary = try await data.withExistingStore { try await $0.editUser(name: name, email: email) }
            printJSON(["userRecordName": .string(summary.user.recordName), "name": .string(summary.user.name),
                       "email": summary.email.map { .string($0) } ?? .null])
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a user with its tokens, private data and shares (--yes).",
            discussion: "The users it shared scorebooks with lose them at their next sync. There is no undo: back up first.")
        @Argument(help: "The user's name.") var name: String
        @Flag(help: "Confirm: the user's data is gone for good.") var yes = false
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            guard yes else {
                throw CommandFailure(message: "user delete removes \(name)'s tokens, private data and shares for good; add --yes to go ahead")
            }
            let name = name
            let deletion = try await data.withExistingStore { try await $0.deleteUser(name: name) }
            printJSON(["userRecordName": .string(deletion.user.recordName), "name": .string(deletion.user.name), "deleted": true,
                       "zones": .int(Int64(deletion.zones)), "shares": .int(Int64(deletion.shares))])
        }
    }
}

struct APITokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apitoken", abstract: "Manage API tokens (ckAPIToken).", subcommands: [Create.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an API token and print it.")
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            printJSON(["apiToken": .string(try await data.withExistingStore { try await $0.createAPIToken() })])
        }
    }
}
