import ArgumentParser
import RecordModel
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
            QUICK START (works offline):
              scorebook person add Ada; scorebook person add Alan; scorebook game add Go
              M=$(scorebook match start --game Go --players Ada,Alan)
              scorebook score add --match "$M" --player Ada 7; scorebook match show "$M"

            GLOBAL OPTIONS (every command takes them, before or after its name):
              --store <path>  The local store, a SQLite file (one per machine); also
                              SCOREBOOK_STORE; default
                              ~/.local/share/scorebook/scorebook.sqlite
              --json          Print machine-readable JSON.
              --book <name>   The book (zone) to work on; default ScorebookData
                              (see 'scorebook book').
              -h, --help      Show help for scorebook or for a command.
              --version       Show the version.

            To sync: 'scorebookd user create NAME --data-dir DIR' on the server gives a
            token; then 'scorebook account login --server URL --token-file FILE' and
            'scorebook sync'.

            REF is a record name, a unique prefix of its UUID, or a unique display name \
            (a game's name, a person's first or full name; a whole name wins over a \
            first name).
            """,
        version: "scorebook \(ProductVersion.current)",
        subcommands: [
            PersonCommand.self, GameCommand.self, CatalogCommand.self, MatchCommand.self, ScoreCommand.self, StandingsCommand.self,
            ExportCommand.self, ImportCommand.self,
            BookCommand.self, AccountCommand.self, SyncCommand.self, StatusCommand.self,
        ])
}
