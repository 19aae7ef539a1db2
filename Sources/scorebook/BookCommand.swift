import ArgumentParser
import Scorebook

/// `scorebook book …`: the books (zones) of the store (CONTRACT §4.3).
struct BookCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "book", abstract: "Create, list and delete books (one zone each).",
        subcommands: [Create.self, List.self, Delete.self])

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create", abstract: "Make a new book; it reaches the server at the next sync.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's name (its zone name).") var name: String

        func run() throws {
            try global.openScorebook().createBook(named: name)
            emit(Output.bookChanged("created", name, json: global.json))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List books: NAME, OWNER, ROLE, records, last sync.")
        @OptionGroup var global: GlobalOptions

        func run() throws {
            emit(Output.books(try global.openScorebook().books(), json: global.json))
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Delete a book you own: here now, on the server at the next sync.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's name.") var name: String

        func run() throws {
            try global.openScorebook().deleteBook(named: name)
            emit(Output.bookChanged("deleted", name, json: global.json))
        }
    }
}
