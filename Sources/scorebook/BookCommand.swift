import ArgumentParser
import Foundation
import Scorebook

/// `scorebook book …`: the books (zones) of the store.
struct BookCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "book", abstract: "Create, list and delete books (one zone each).",
        subcommands: [Create.self, List.self, Delete.self, Share.self, Unshare.self, Participants.self, Invitations.self,
                      Accept.self, Leave.self, Rename.self])

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create", abstract: "Make a new book; it reaches the server at the next sync.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's name (its zone name).") var name: String

        func run() throws {
            let book = try global.openScorebook()
            try book.createBook(named: name)
            emit(Output.bookChanged("created", name, json: global.json))
            // On standard error, so that the output stays the one line: from now on the name alone names two books.
            let others = try book.sharedBooks(named: name)
            if !others.isEmpty {
                warn("note: \(others.joined(separator: ", ")) is here too; name yours \(name)@me and the other by NAME@OWNER")
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List books: NAME, OWNER, ROLE, records, last sync.")
        @OptionGroup var global: GlobalOptions

        func run() throws {
            let book = try global.openScorebook()
            emit(Output.books(try book.books(), ownerLabels: book.ownerLabels(), json: global.json))
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Delete a book you own: here now, on the server at the next sync.",
            discussion: "A book others have accepted goes for them too: it asks first on a terminal, and needs --yes otherwise.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's name.") var name: String
        @Flag(name: .long, help: "Delete a book others have accepted without asking.") var yes = false

        func run() async throws {
            let book = try global.openScorebook()
            if !yes {
                let others: [String]
                do {
                    others = try await book.acceptedParticipants(ofBook: name)
                } catch let error as ScorebookError where error.kind == .sync {
                    throw ScorebookError(.sync, "cannot tell who else has the book \(name) (\(error.description)); run with --yes to delete it anyway")
                }
                if !others.isEmpty { try Self.confirm(name, others) }
            }
            try book.deleteBook(named: name)
            emit(Output.bookChanged("deleted", name, json: global.json))
        }

        /// Says who loses the book, and asks on a terminal; anywhere else --yes is needed.
        static func confirm(_ name: String, _ others: [String]) throws {
            let what = "deleting \(name) also deletes it for \(others.joined(separator: ", ")), who accepted it"
            guard isatty(STDIN_FILENO) == 1 else {
                throw ScorebookError(.invalidInput, "\(what); run with --yes to delete it for everyone")
            }
            FileHandle.standardError.write(Data("\(DisplayText.escapingControls(what)). Delete it? [y/N] ".utf8))
            let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
            guard answer == "y" || answer == "yes" else { throw ScorebookError(.invalidInput, "nothing deleted") }
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rename", abstract: "Give a book you own a new title (shared: the title participants see); its zone name stays.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's name or title.") var name: String
        @Argument(help: "The new title.") var title: String

        func run() async throws {
            try await global.openScorebook().renameBook(named: name, to: title)
            emit(global.json ? Output.bookChanged("renamed", title, json: true) : "renamed book \(name) to \"\(title)\"")
        }
    }

    /// Opens the book `name` (the global `--book` is for other commands).
    static func open(_ global: GlobalOptions, _ name: String) throws -> Scorebook {
        var options = global
        options.book = name
        return try options.openScorebook()
    }

    struct Share: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "share", abstract: "Share a book you own with a user; prints the share URL.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's name.") var name: String
        @Option(name: .long, help: ArgumentHelp("The user: an email or a user record name.", valueName: "email|user")) var with: String
        @Flag(name: .long, help: "The user may read but not change the book.") var readOnly = false

        func run() async throws {
            let book = try BookCommand.open(global, name)
            let (url, waits) = try await book.shareBook(with: with, readOnly: readOnly)
            emit(Output.bookChanged("shared", url, json: global.json).replacingOccurrences(of: "shared book ", with: ""))
            // On standard error: the URL stays the only output, for `URL=$(scorebook book share …)`.
            if !global.json { warn("shared \(name) with \(book.userLabel(with)) (\(readOnly ? "read-only" : "read-write"))") }
            if waits { warn("no user has \(with) yet; the invitation waits for them") }
        }
    }

    struct Unshare: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unshare", abstract: "Remove a user from a book you share, or everyone (--everyone).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's name.") var name: String
        @Option(name: .long, help: ArgumentHelp("The user: an email, a user record name, or a name as 'book participants' shows it.",
                                                valueName: "email|user|name"))
        var with: String?
        @Flag(name: .long, help: "Stop sharing the book with everyone.") var everyone = false

        func validate() throws {
            guard (with != nil) != everyone else { throw ValidationError("give --with USER, or --everyone") }
        }

        func run() async throws {
            let removed = try await BookCommand.open(global, name).unshareBook(with: everyone ? nil : with)
            if global.json {
                emit(Output.bookChanged("unshared", name, json: true))
            } else {
                emit(removed.map { "\($0) is no longer in \(name)" }.joined(separator: "\n"))
            }
        }
    }

    struct Participants: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "participants", abstract: "Who takes part in a shared book (yours or one you accepted): permission, accepted or invited.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's name.") var name: String

        func run() async throws {
            emit(Output.participants(try await BookCommand.open(global, name).bookParticipants(), json: global.json))
        }
    }

    struct Invitations: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "invitations", abstract: "Shares that invite you and that you have not accepted.")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            emit(Output.invitations(try await global.openScorebook().invitations(), json: global.json))
        }
    }

    struct Accept: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "accept", abstract: "Accept a share (URL, short GUID or an invitation's title); it comes with the next sync.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The share's URL, short GUID, or an invitation's title.") var reference: String

        func run() async throws {
            let name = try await global.openScorebook().acceptBook(reference)
            emit(Output.bookChanged("accepted", name, json: global.json))
        }
    }

    struct Leave: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "leave", abstract: "Leave a book shared with you; it leaves this store.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's name.") var name: String

        func run() async throws {
            try await BookCommand.open(global, name).leaveBook()
            emit(Output.bookChanged("left", name, json: global.json))
        }
    }
}
