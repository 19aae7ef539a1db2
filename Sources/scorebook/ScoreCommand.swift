import ArgumentParser
import Scorebook

struct ScoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "score", abstract: "Record scores.", subcommands: [Add.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Add a score for a player of a match; prints the new record name.")
        @OptionGroup var global: GlobalOptions
        @Option(name: .long, help: "The match (REF).") var match: String
        @Option(name: .long, help: "A person playing in the match, or the Player record (REF).") var player: String
        @Option(name: .long, help: "The round (default: the player's next).") var round: Int64?
        // Captured unparsed so that a negative value such as -5 is not taken for an option.
        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The points scored.", valueName: "value"))
        var value: [String] = []

        /// The words given for VALUE, without a `--` that ends the options (`score add … -- -3`),
        /// which this way of capturing keeps.
        var valueWords: [String] {
            guard let terminator = value.firstIndex(of: "--") else { return value }
            var words = value
            words.remove(at: terminator)
            return words
        }

        func validate() throws {
            guard valueWords.count == 1, Double(valueWords[0]) != nil else {
                throw ValidationError("give exactly one score VALUE, a number")
            }
        }

        func run() throws {
            let score = try global.openScorebook().addScore(matchReference: match, playerReference: player,
                                                            value: Double(valueWords[0]) ?? 0, round: round)
            emit(Output.created(score, json: global.json))
        }
    }
}
