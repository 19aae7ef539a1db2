import ArgumentParser
import Scorebook

/// Every command of the tree states its `commandName`. Without it, ArgumentParser derives the
/// name with `String(describing: Self.self)` on every start, and the dynamic casts behind that
/// scan every protocol conformance of every loaded library: about a tenth of a CLI start
/// (BENCHMARKS.md, CLI cold start).
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
            ExportCommand.self, ImportCommand.self,
            AccountCommand.self, SyncCommand.self, StatusCommand.self,
        ])
}
