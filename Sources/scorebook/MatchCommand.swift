import ArgumentParser
import Scorebook

struct MatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "match", abstract: "Start, edit, finish, reopen, show, list and delete matches.",
        subcommands: [Start.self, Edit.self, PlayerCommand.self, Finish.self, Reopen.self, Show.self, List.self, Delete.self,
                      Photo.self, Photos.self])

    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "start", abstract: "Start a match; prints the new record name.")
        @OptionGroup var global: GlobalOptions
        @Option(name: .long, help: "The game (REF).") var game: String
        @Option(name: .long, help: ArgumentHelp("The people playing, in seat order (REF,REF,…).", valueName: "refs"))
        var players: String
        @Option(name: .long, help: ArgumentHelp("When it started (ISO-8601; default now).", valueName: "date")) var date: String?
        @Option(name: .long, help: "Notes on the match.") var notes: String?
        @Option(name: .long, help: ArgumentHelp("Where it is played.", valueName: "name")) var location: String?
        @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The place's latitude (with --longitude).", valueName: "x"))
        var latitude: Double?
        @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The place's longitude (with --latitude).", valueName: "y"))
        var longitude: Double?

        func run() throws {
            let references = players.split(separator: ",").map(String.init)
            if location == nil, latitude != nil || longitude != nil {
                throw ScorebookError(.invalidInput, "--latitude and --longitude need --location NAME")
            }
            let place = location.map { MatchPlace(name: $0, latitude: latitude, longitude: longitude) }
            let match = try global.openScorebook().startMatch(
                gameReference: game, playerReferences: references, date: try date.map(Match.date(fromArgument:)), notes: notes,
                location: place)
            emit(Output.created(match, json: global.json))
        }
    }

    struct Edit: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "edit", abstract: "Change a match's date, notes, place or game.",
            discussion: "Another game for a finished match changes its result: it asks first on a terminal, and needs --yes otherwise.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The match (REF).") var reference: String
        @Option(name: .long, help: ArgumentHelp("When it started (ISO-8601).", valueName: "date")) var date: String?
        @Option(name: .long, help: "Notes on the match (an empty value clears them).") var notes: String?
        @Option(name: .long, help: ArgumentHelp("Where it was played (an empty value removes the place).", valueName: "name"))
        var location: String?
        @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The place's latitude (with --longitude).", valueName: "x"))
        var latitude: Double?
        @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The place's longitude (with --latitude).", valueName: "y"))
        var longitude: Double?
        @Option(name: .long, help: "The game it was (REF).") var game: String?
        @Flag(name: .long, help: "Change a finished match's result without asking.") var yes = false

        func run() throws {
            if location == nil, latitude != nil || longitude != nil {
                throw ScorebookError(.invalidInput, "--latitude and --longitude need --location NAME")
            }
            let book = try global.openScorebook()
            try ChangeConfirmation.confirm(try book.matchEditPreview(reference: reference, gameReference: game), yes: yes)
            let match = try book.editMatch(
                reference: reference, date: try date.map(Match.date(fromArgument:)), notes: notes,
                location: location.map { MatchPlace(name: $0, latitude: latitude, longitude: longitude) }, gameReference: game)
            emit(Output.created(match, json: global.json))
        }
    }

    struct PlayerCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "player", abstract: "Add a player to a match (a late arrival) or remove one (a wrong seat).",
            subcommands: [Add.self, Remove.self])

        struct Add: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "add", abstract: "Seat a person in a match after its last seat; prints the new Player's record name.",
                discussion: "A finished match's result changes: it asks first on a terminal, and needs --yes otherwise.")
            @OptionGroup var global: GlobalOptions
            @Argument(help: "The match (REF).") var match: String
            @Argument(help: "The person (REF).") var person: String
            @Flag(name: .long, help: "Change a finished match's result without asking.") var yes = false

            func run() throws {
                let book = try global.openScorebook()
                try ChangeConfirmation.confirm(try book.playerAdditionPreview(matchReference: match, personReference: person), yes: yes)
                emit(Output.created(try book.addPlayer(matchReference: match, personReference: person), json: global.json))
            }
        }

        struct Remove: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "remove", abstract: "Remove a player, with their scores, from a match.",
                discussion: "A finished match's result changes: it asks first on a terminal, and needs --yes otherwise.")
            @OptionGroup var global: GlobalOptions
            @Argument(help: "The match (REF).") var match: String
            @Argument(help: "A person playing in the match, or the Player record (REF).") var player: String
            @Flag(name: .long, help: "Change a finished match's result without asking.") var yes = false

            func run() throws {
                let book = try global.openScorebook()
                let preview = try book.playerRemovalPreview(matchReference: match, playerReference: player)
                try ChangeConfirmation.confirm(preview, yes: yes)
                emit(Output.deleted(try book.removePlayer(matchReference: match, playerReference: player), json: global.json))
            }
        }
    }

    struct Finish: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "finish", abstract: "Mark a match finished.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The match (REF).") var reference: String

        func run() throws {
            let match = try global.openScorebook().finishMatch(reference: reference)
            emit(Output.created(match, json: global.json))
        }
    }

    struct Reopen: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reopen", abstract: "Reopen a finished match so that its scores can change again.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The match (REF).") var reference: String

        func run() throws {
            let match = try global.openScorebook().reopenMatch(reference: reference)
            emit(Output.created(match, json: global.json))
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Show the match, each player's total and rank, and the winner.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The match (REF).") var reference: String
        @Flag(name: .long, help: "Also show a table of rounds by players, with totals.") var rounds = false

        func run() throws {
            let book = try global.openScorebook()
            let match = try book.resolve(Match.self, reference)
            let line = Output.MatchLine(match: match, gameName: try book.gameName(of: match), result: try book.result(of: match),
                                        location: try book.location(of: match))
            var shown = line
            shown.photos = try book.matchPhotos(matchReference: match.recordName).map(\.recordName).sorted()
            // Who entered each score, only where others write too.
            if try book.isSharedBook() { shown.sharedScores = try book.scoreLines(of: match) }
            emit(MatchShow.render(shown, rounds: rounds ? try book.rounds(of: match) : nil, json: global.json))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List matches, newest first.")
        @OptionGroup var global: GlobalOptions
        @Option(name: .long, help: "Only this game's matches (REF).") var game: String?
        @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Only the newest N matches.", valueName: "n")) var limit: Int?

        func validate() throws {
            if let limit, limit < 1 { throw ValidationError("--limit takes a number of matches, 1 or more") }
        }

        func run() throws {
            let book = try global.openScorebook()
            let lines = try book.matches(gameReference: game).reversed().prefix(limit ?? .max).map {
                Output.MatchLine(match: $0, gameName: try book.gameName(of: $0), result: try book.result(of: $0))
            }
            emit(Output.matches(lines, json: global.json))
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete", abstract: "Delete a match, with its players and scores.",
            discussion: "A finished match is deleted after asking on a terminal; elsewhere it needs --yes.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The match (REF).") var reference: String
        @Flag(name: .long, help: "Delete without asking, even when finished matches change.") var yes = false

        func run() throws {
            try DeletionConfirmation.delete(Match.self, reference: reference, yes: yes, global: global)
        }
    }

    struct Photos: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "photos", abstract: "List a match's photos.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The match (REF).") var reference: String

        func run() throws {
            let book = try global.openScorebook()
            let photos = try book.matchPhotos(matchReference: reference)
            emit(Output.photos(photos, held: book.hasPicture, json: global.json))
        }
    }

    struct Photo: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "photo", abstract: "Add, save or delete a match photo.", subcommands: [Add.self, Save.self, Delete.self])

        struct Add: ParsableCommand {
            static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a photo to a match; prints its record name.")
            @OptionGroup var global: GlobalOptions
            @Argument(help: "The match (REF).") var match: String
            @Argument(help: "The picture (at most 50 MB).") var file: String

            func run() throws {
                emit(Output.created(try global.openScorebook().addMatchPhoto(matchReference: match, file: file), json: global.json))
            }
        }

        struct Save: ParsableCommand {
            static let configuration = CommandConfiguration(commandName: "save", abstract: "Write a match photo to a file.")
            @OptionGroup var global: GlobalOptions
            @Argument(help: "The photo (REF).") var reference: String
            @Option(name: .long, help: "The file to write.") var to: String
            @Flag(name: .long, help: "Replace the file if it exists.") var force = false

            func run() throws {
                let picture = try global.openScorebook().saveMatchPhoto(reference: reference, to: to, overwrite: force)
                emit(Output.pictureSaved(picture, to: to, json: global.json))
            }
        }

        struct Delete: ParsableCommand {
            static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a match photo.")
            @OptionGroup var global: GlobalOptions
            @Argument(help: "The photo (REF).") var reference: String

            func run() throws {
                emit(Output.deleted(try global.openScorebook().delete(MatchImage.self, reference: reference), json: global.json))
            }
        }
    }
}
