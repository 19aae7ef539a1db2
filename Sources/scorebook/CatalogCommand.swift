import ArgumentParser
import Scorebook

/// `scorebook catalog list|publish|unpublish`: the public game catalogue of the logged-in server's container.
struct CatalogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog", abstract: "The public game catalogue: publish a club's games once, add them anywhere.",
        subcommands: [List.self, Publish.self, Unpublish.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the catalogue's games (needs a login).")
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let book = try global.openScorebook()
            let entries = try await book.catalog()
            emit(Output.catalog(entries, publishers: book.publisherLabels(entries), json: global.json))
        }
    }

    struct Publish: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "publish",
            abstract: "Publish a local game (its name and scoring) to the catalogue; prints the entry's record name.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The game (REF).") var reference: String
        @Option(name: .long, help: "What the game is, for people browsing the catalogue.") var description = ""

        func run() async throws {
            let entry = try await global.openScorebook().publishToCatalog(gameReference: reference, description: description)
            emit(Output.published(entry, json: global.json))
        }
    }

    struct Unpublish: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unpublish", abstract: "Take a game you published out of the catalogue; games added from it stay.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The game's name in the catalogue.") var name: String

        func run() async throws {
            let entry = try await global.openScorebook().unpublishFromCatalog(name: name)
            emit(Output.unpublished(entry, json: global.json))
        }
    }
}
