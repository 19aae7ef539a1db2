import ArgumentParser
import Scorebook

struct GameCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "game", abstract: "Add, list and delete games.",
        subcommands: [Add.self, Edit.self, List.self, Delete.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a game; prints the new record name.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The game's name (several words are joined).") var name: [String] = []
        @Flag(name: .long, help: "The lowest total wins.") var lowScoreWins = false
        @Flag(name: .long, help: "Add the game even when the book has one of the same name.") var allowDuplicate = false
        @Option(name: .customLong("from-catalog"), help: ArgumentHelp("Add the public catalogue's game of this name (needs a login).", valueName: "name"))
        var fromCatalog: String?

        func validate() throws {
            if fromCatalog != nil {
                if !name.isEmpty || lowScoreWins { throw ValidationError("--from-catalog takes the name and scoring from the catalogue; give no name or --low-score-wins") }
            } else if name.isEmpty {
                throw ValidationError("give the game's name, or --from-catalog NAME")
            }
        }

        func run() async throws {
            let book = try global.openScorebook()
            let game: Game
            if let fromCatalog {
                game = try await book.addGameFromCatalog(name: fromCatalog, allowDuplicate: allowDuplicate)
            } else {
                game = try book.addGame(name: name.joined(separator: " "), lowScoreWins: lowScoreWins, allowDuplicate: allowDuplicate)
            }
            emit(Output.created(game, json: global.json))
        }
    }

    struct Edit: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "edit", abstract: "Rename a game or change how it is scored.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The game (REF).") var reference: String
        @Option(name: .long, help: "New name.") var name: String?
        @Option(name: .long, help: ArgumentHelp("Whether the lowest total wins.", valueName: "true|false")) var lowScoreWins: Bool?

        func run() throws {
            let game = try global.openScorebook().editGame(reference: reference, name: name, lowScoreWins: lowScoreWins)
            emit(Output.created(game, json: global.json))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List games.")
        @OptionGroup var global: GlobalOptions

        func run() throws {
            let games = try global.openScorebook().all(Game.self).sorted {
                $0.name.lowercased() != $1.name.lowercased() ? $0.name.lowercased() < $1.name.lowercased() : $0.recordName < $1.recordName
            }
            emit(Output.games(games, json: global.json))
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Delete a game, with its matches.",
            discussion: "When finished matches go, asks first on a terminal; elsewhere needs --yes.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The game (REF).") var reference: String
        @Flag(name: .long, help: "Delete without asking, even when finished matches change.") var yes = false

        func run() throws {
            try DeletionConfirmation.delete(Game.self, reference: reference, yes: yes, global: global)
        }
    }
}
