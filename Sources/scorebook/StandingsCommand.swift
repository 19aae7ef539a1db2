import ArgumentParser
import Scorebook

struct StandingsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "standings",
        abstract: "Per person: matches played, won, win rate, average total.",
        discussion: "Only finished matches count: played is the finished matches the person is in, won those they won with a single best total.")
    @OptionGroup var global: GlobalOptions
    @Option(name: .long, help: "Only this game's matches (REF).") var game: String?

    func run() throws {
        emit(Output.standings(try global.openScorebook().standings(gameReference: game), json: global.json))
    }
}
