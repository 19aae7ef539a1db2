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
        // Unconditional: `--round -1` is a wrong round, not a missing value.
        @Option(name: .long, parsing: .unconditional, help: "The round, from 1 (default: the player's next).") var round: Int64?
        // Captured unparsed so that a negative value such as -5 is not taken for an option.
        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The points scored.", valueName: "value"))
        var value: [String] = []

        func validate() throws {
            guard ScoreWords.words(value).count == 1 else { throw ValidationError("give exactly one score VALUE, a number") }
            _ = try ScoreWords.value(ScoreWords.words(value)[0])
        }

        func run() throws {
            let score = try global.openScorebook().addScore(matchReference: match, playerReference: player,
                                                            value: try ScoreWords.value(ScoreWords.words(value)[0]), round: round)
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
            commandName: "edit", abstract: "Change a score's value (and round).",
            usage: """
                scorebook score edit REF VALUE [--round N]
                scorebook score edit --match REF --player REF --round N VALUE
                """)
        @OptionGroup var global: GlobalOptions
        @OptionGroup var place: ScorePlace
        @Option(name: .long, parsing: .unconditional, help: "The score's round, with --match and --player; else move the score to this round.")
        var round: Int64?
        // REF and VALUE captured unparsed so that a negative value such as -5 is not taken for an option.
        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The score (REF) and its new value, or only the value.",
                                                               valueName: "ref value"))
        var arguments: [String] = []

        func validate() throws {
            let count = ScoreWords.words(arguments).count
            if place.isGiven {
                guard count == 1 else { throw ValidationError("with --match and --player, give only the new VALUE") }
            } else {
                guard count == 2 else { throw ValidationError("give the score's REF and one new VALUE, a number") }
            }
            _ = try ScoreWords.value(ScoreWords.words(arguments)[count - 1])
        }

        func run() throws {
            let book = try global.openScorebook()
            let words = ScoreWords.words(arguments)
            if place.isGiven {
                let name = try place.scoreReference(in: book, round: round)
                emit(Output.created(try book.editScore(reference: name, value: try ScoreWords.value(words[0])), json: global.json))
            } else {
                let score = try book.editScore(reference: words[0], value: try ScoreWords.value(words[1]), round: round)
                emit(Output.created(score, json: global.json))
            }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Delete a score.",
            usage: """
                scorebook score delete REF
                scorebook score delete --match REF --player REF --round N
                """)
        @OptionGroup var global: GlobalOptions
        @OptionGroup var place: ScorePlace
        @Option(name: .long, parsing: .unconditional, help: "The score's round (with --match and --player).") var round: Int64?
        @Argument(help: "The score (REF).") var reference: String?

        func validate() throws {
            guard place.isGiven != (reference != nil) else {
                throw ValidationError("give the score's REF, or --match, --player and --round")
            }
        }

        func run() throws {
            let book = try global.openScorebook()
            let name = place.isGiven ? try place.scoreReference(in: book, round: round) : reference ?? ""
            emit(Output.deleted(try book.deleteScore(reference: name), json: global.json))
        }
    }
}

/// A score named by its place: the match, the player and the round.
struct ScorePlace: ParsableArguments {
    @Option(name: .long, help: "The match (REF), to name a score by its place.") var match: String?
    @Option(name: .long, help: "A person playing in the match, or the Player record (REF).") var player: String?

    var isGiven: Bool { match != nil || player != nil }

    /// The record name of the score at this place in `round`.
    func scoreReference(in book: Scorebook, round: Int64?) throws -> String {
        guard let match, let player, let round else {
            throw ScorebookError(.invalidInput, "a score named by its place needs --match, --player and --round")
        }
        return try book.scoreReference(matchReference: match, playerReference: player, round: round)
    }
}

/// The words typed for a score's REF and VALUE.
enum ScoreWords {
    /// The words without a `--` that ends the options (`score edit REF -- -3`), which capturing
    /// them unparsed keeps.
    static func words(_ captured: [String]) -> [String] { captured.filter { $0 != "--" } }

    /// A VALUE as a number; `1,5` is refused with the way to write it (a usage error, checked
    /// before the command runs).
    static func value(_ word: String) throws -> Double {
        if let number = Double(word) { return number }
        let pointed = word.replacingOccurrences(of: ",", with: ".")
        if Double(pointed) != nil {
            throw ValidationError("\"\(word)\" is not a number here; write \(pointed) (with a point)")
        }
        throw ValidationError("\"\(word)\" is not a number; a score VALUE is a number such as 7, -3 or 1.5")
    }
}
