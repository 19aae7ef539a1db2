import ArgumentParser
import Scorebook

struct ScoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "score", abstract: "Add, list, edit and delete scores.", subcommands: [Add.self, List.self, Edit.self, Delete.self])

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

        func validate() throws {
            guard value.count == 1, Double(value[0]) != nil else {
                throw ValidationError("give exactly one score VALUE, a number")
            }
        }

        func run() throws {
            let score = try global.openScorebook().addScore(matchReference: match, playerReference: player,
                                                            value: Double(value[0]) ?? 0, round: round)
            emit(Output.created(score, json: global.json))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List a match's scores: record name, player, round, value and who entered it.")
        @OptionGroup var global: GlobalOptions
        @Option(name: .long, help: "The match (REF).") var match: String

        func run() throws {
            let book = try global.openScorebook()
            let lines = try book.scoreLines(of: try book.resolve(Match.self, match))
            emit(ScoreLine.render(lines, json: global.json))
        }
    }

    struct Edit: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "edit", abstract: "Change a score's value (and round).")
        @OptionGroup var global: GlobalOptions
        @Option(name: .long, help: "Move the score to this round.") var round: Int64?
        // REF and VALUE captured unparsed so that a negative value such as -5 is not taken for an option.
        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The score (REF) and its new value.", valueName: "ref value"))
        var arguments: [String] = []

        func validate() throws {
            guard arguments.count == 2, Double(arguments[1]) != nil else {
                throw ValidationError("give the score's REF and one new VALUE, a number")
            }
        }

        func run() throws {
            let score = try global.openScorebook().editScore(reference: arguments[0], value: Double(arguments[1]) ?? 0, round: round)
            emit(Output.created(score, json: global.json))
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a score.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The score (REF).") var reference: String

        func run() throws {
            emit(Output.deleted(try global.openScorebook().deleteScore(reference: reference), json: global.json))
        }
    }
}
