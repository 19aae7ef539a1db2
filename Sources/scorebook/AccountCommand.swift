import ArgumentParser
import Foundation
import Scorebook

struct AccountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account", abstract: "Log in to a sync server, log out, show the account.",
        discussion: "The rules for whose data goes where are in docs/guide/accounts.md.",
        subcommands: [Login.self, Logout.self, Status.self, Password.self])

    struct Login: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "login", abstract: "Log in with a token from 'scorebookd user create'.",
            discussion: "The token comes from exactly one of --token, --token-file or the environment variable SCOREBOOK_TOKEN.")
        @OptionGroup var global: GlobalOptions
        @Option(name: .long, help: "The server, e.g. http://127.0.0.1:8080.") var server: String
        @Option(name: .long, help: "The user's token (visible to other users in the process list; prefer --token-file).")
        var token: String?
        @Option(name: .customLong("token-file"), help: ArgumentHelp("A file holding the token.", valueName: "file"))
        var tokenFile: String?
        @Option(name: .long, help: "The container.") var container = "iCloud.scorebook"
        @Option(name: .long, help: "The environment: production or development.") var environment = "production"

        func run() async throws {
            let token = try TokenSource.token(flag: token, file: tokenFile,
                                              environment: ProcessInfo.processInfo.environment["SCOREBOOK_TOKEN"])
            let book = try global.openScorebook()
            let account = try await book.login(server: server, token: token, container: container, environment: environment)
            let status = try book.status()
            let label = await book.accountLabel(account)
            emit(global.json ? Output.account(status, json: true) : "logged in as \(Output.account(status, label: label, json: false))")
        }
    }

    struct Logout: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "logout", abstract: "Forget the credentials; the local data stays unless --delete-local.")
        @OptionGroup var global: GlobalOptions
        @Flag(name: .long, help: "Also delete every local record and unsent change.") var deleteLocal = false

        func run() throws {
            let book = try global.openScorebook()
            try book.logout(deleteLocalData: deleteLocal)
            emit(global.json ? Output.account(try book.status(), json: true)
                 : (deleteLocal ? "logged out; local data deleted" : "logged out; local data kept"))
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Show the account.")
        @OptionGroup var global: GlobalOptions

        func run() throws {
            let book = try global.openScorebook()
            let status = try book.status()
            emit(Output.account(status, label: (status.account?.userRecordName ?? status.dataOwner).flatMap(book.personLabel), json: global.json))
        }
    }

    struct Password: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "password", abstract: "Change the password of the server's web sign-in page.",
            discussion: "Reads the current password (empty when none is set yet) and the new one: asked without echo on a terminal, otherwise two lines of standard input.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let current = try Password.read("Current password (empty if none): ")
            let new = try Password.read("New password: ")
            let book = try global.openScorebook()
            try await book.changePassword(current: current, new: new)
            emit(global.json ? "{\"passwordChanged\":true}" : "password changed")
        }

        /// One password: typed without echo on a terminal, else the next line of standard input.
        static func read(_ prompt: String) throws -> String {
            if isatty(STDIN_FILENO) == 1, let typed = getpass(prompt) { return String(cString: typed) }
            guard let line = readLine(strippingNewline: true) else {
                throw ScorebookError(.invalidInput, "expected the current and the new password on standard input, one a line")
            }
            return line.hasSuffix("\r") ? String(line.dropLast()) : line
        }
    }
}
