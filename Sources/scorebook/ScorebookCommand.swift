import ArgumentParser
import Scorebook

struct ScorebookCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scorebook",
        abstract: "Keep scores of games, offline, and sync them between machines.",
        discussion: """
            REF is a record name, a unique prefix of its UUID, or a unique display name (a game's \
            name, a person's first or full name).
            """,
        subcommands: [
            PersonCommand.self, GameCommand.self, MatchCommand.self, ScoreCommand.self, StandingsCommand.self,
            AccountCommand.self, SyncCommand.self, StatusCommand.self,
        ])
}
