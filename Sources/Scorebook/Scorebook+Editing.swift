import Foundation
import RecordModel
import SyncEngine

/// A record deleted by a command, with what it was called.
public struct DeletedRecord: Equatable, Sendable {
    public var recordType: String
    public var recordName: String
    public var displayName: String
}

extension Scorebook {
    @discardableResult
    public func addPerson(firstName: String, lastName: String? = nil, email: String? = nil, allowDuplicate: Bool = false) throws -> Person {
        let first = try NameValidation.validated(firstName, field: "a person's first name")
        let last = try NameValidation.validatedOptional(lastName, field: "a person's last name")
        if !allowDuplicate {
            let wanted = (last.map { "\(first) \($0)" } ?? first).lowercased()
            try refuseDuplicate(of: all(Person.self).first { $0.fullName.lowercased() == wanted })
        }
        let person = Person(firstName: first, lastName: last, emailAddress: email.flatMap(Self.nonEmpty),
                            modificationDate: now())
        try save([person])
        return person
    }

    @discardableResult
    public func addGame(name: String, lowScoreWins: Bool = false, allowDuplicate: Bool = false) throws -> Game {
        let name = try NameValidation.validated(name, field: "a game's name")
        if !allowDuplicate { try refuseDuplicate(of: all(Game.self).first { $0.name.lowercased() == name.lowercased() }) }
        let game = Game(name: name, lowScoreWins: lowScoreWins, modificationDate: now())
        try save([game])
        return game
    }

    /// Refuses to add a second person or game of a name the book already has, naming the first.
    func refuseDuplicate(of existing: (any CloudKitCompatible)?) throws {
        guard let existing else { return }
        let noun = type(of: existing).recordType.lowercased()
        throw ScorebookError(.invalidInput, "a \(noun) named \"\(existing.displayName)\" already exists "
            + "(\(ReferenceResolver.shortID(of: existing.recordName))); add --allow-duplicate to add another")
    }

    /// Refuses to give a person or game the name of another one, naming that one.
    func refuseRename(onto existing: (any CloudKitCompatible)?) throws {
        guard let existing else { return }
        let noun = type(of: existing).recordType.lowercased()
        throw ScorebookError(.invalidInput, "a \(noun) named \"\(existing.displayName)\" already exists "
            + "(\(ReferenceResolver.shortID(of: existing.recordName))); choose another name")
    }

    /// Changes a person's names or email; nil leaves a field as it is, an empty string clears
    /// the last name or email.
    @discardableResult
    public func editPerson(reference: String, firstName: String? = nil, lastName: String? = nil, email: String? = nil) throws -> Person {
        var person = try resolve(Person.self, reference)
        if let firstName { person.firstName = try NameValidation.validated(firstName, field: "a person's first name") }
        if let lastName { person.lastName = try NameValidation.validatedOptional(lastName, field: "a person's last name") }
        if let email { person.emailAddress = Self.nonEmpty(email) }
        // A rename onto someone else's name would leave two people neither name resolves to.
        if firstName != nil || lastName != nil {
            let wanted = person.fullName.lowercased()
            try refuseRename(onto: all(Person.self).first { $0.recordName != person.recordName && $0.fullName.lowercased() == wanted })
        }
        person.modificationDate = now()
        try save([person])
        return person
    }

    /// Renames a game or changes how it is scored; nil leaves a field as it is.
    @discardableResult
    public func editGame(reference: String, name: String? = nil, lowScoreWins: Bool? = nil) throws -> Game {
        var game = try resolve(Game.self, reference)
        if let name {
            game.name = try NameValidation.validated(name, field: "a game's name")
            let wanted = game.name.lowercased()
            try refuseRename(onto: all(Game.self).first { $0.recordName != game.recordName && $0.name.lowercased() == wanted })
        }
        if let lowScoreWins { game.lowScoreWins = lowScoreWins }
        game.modificationDate = now()
        try save([game])
        return game
    }

    /// Starts a match of a game with people in seat order; the match, its players and its
    /// location (when given) are saved together. `date` is when it started (default now).
    @discardableResult
    public func startMatch(gameReference: String, playerReferences: [String], date: Date? = nil, notes: String? = nil,
                           location: MatchPlace? = nil) throws -> Match
    {
        let game = try resolve(Game.self, gameReference)
        let references = playerReferences.compactMap(Self.nonEmpty)
        guard !references.isEmpty else { throw ScorebookError(.invalidInput, "a match needs at least one player") }
        let people = try all(Person.self)
        var chosen: [Person] = []
        for reference in references {
            let person = try resolve(reference, among: people)
            guard !chosen.contains(where: { $0.recordName == person.recordName }) else {
                throw ScorebookError(.invalidInput, "\(person.fullName) is listed twice")
            }
            chosen.append(person)
        }
        let notes = try notes.flatMap { try MatchPlace.validNotes($0) }
        let location = try location?.validated()
        let edited = now()
        let match = Match(game: game.recordName, startDate: date ?? edited, notes: notes, modificationDate: edited)
        let players = chosen.enumerated().map { seat, person in
            Player(match: match.recordName, person: person.recordName, seat: Int64(seat + 1), modificationDate: edited)
        }
        var entities: [any CloudKitCompatible] = [match] + players
        if let location {
            entities.append(MatchLocation(match: match.recordName, name: location.name, latitude: location.latitude,
                                          longitude: location.longitude, modificationDate: edited))
        }
        try save(entities)
        return match
    }

    /// Adds a score for a player of a match; without `round`, the player's next round. A
    /// finished match, or a round the player already has a score in, is refused.
    @discardableResult
    public func addScore(matchReference: String, playerReference: String, value: Double, round: Int64? = nil) throws -> Score {
        guard value.isFinite else { throw ScorebookError(.invalidInput, "a score must be a finite number") }
        let match = try resolve(Match.self, matchReference)
        try requireOpen(match)
        let player = try resolvePlayer(playerReference, in: match)
        let earlier = try entities(Score.self, referencing: player.recordName).filter { $0.player == player.recordName }
        let nextRound = (earlier.compactMap(\.round).max() ?? Int64(earlier.count)) + 1
        let round = try Self.validRound(round) ?? nextRound
        if let taken = earlier.first(where: { $0.round == round }) {
            throw try duplicateRound(taken, of: player)
        }
        let score = Score(player: player.recordName, value: value, round: round, modificationDate: now())
        try save([score])
        return score
    }

    /// The Player of `match` that `reference` names: a Player record, or a person in the match.
    public func resolvePlayer(_ reference: String, in match: Match) throws -> Player {
        let players = try entities(Player.self, referencing: match.recordName).filter { $0.match == match.recordName }
        if case .found(let name) = ReferenceResolver.resolve(reference, among: players.map {
            ReferenceResolver.Candidate(recordName: $0.recordName, names: [], displayName: $0.displayName)
        }) {
            return players.first { $0.recordName == name }!
        }
        let people = try players.compactMap { try entity(Person.self, named: $0.person) }
        do {
            let person = try resolve(reference, among: people)
            return players.first { $0.person == person.recordName }!
        } catch let error as ScorebookError where error.description.hasPrefix("no person") {
            throw ScorebookError(.badReference, "no player of this match matches \"\(reference)\"")
        }
    }

    /// Marks a match finished now; a finished match stays as it is.
    @discardableResult
    public func finishMatch(reference: String) throws -> Match {
        var match = try resolve(Match.self, reference)
        guard match.endDate == nil else { return match }
        let date = now()
        match.endDate = date
        match.modificationDate = date
        try save([match])
        return match
    }

    /// Reopens a finished match so that its scores can change again; an open match stays as it is.
    @discardableResult
    public func reopenMatch(reference: String) throws -> Match {
        var match = try resolve(Match.self, reference)
        guard match.endDate != nil else { return match }
        match.endDate = nil
        match.modificationDate = now()
        try save([match])
        return match
    }

    /// Refuses a score change in a finished match, naming the command that reopens it.
    func requireOpen(_ match: Match) throws {
        guard match.isFinished else { return }
        // Reopening would be refused too in a book shared read-only: say that instead.
        try requireWritableBook()
        throw ScorebookError(.invalidInput, "the match \(match.recordName) is finished; "
            + "run `\(ShellCommand.line(["scorebook", "match", "reopen", match.recordName]))` before adding, editing or deleting its scores")
    }

    /// Refuses any change to a book shared with the user read-only, before anything is queued.
    func requireWritableBook() throws {
        guard store.book.scope == .shared, try store.bookSummary()?.role == "read-only" else { return }
        throw ScorebookError(.invalidInput, "the book \(store.book.zoneName) is shared with you read-only; it cannot be changed")
    }

    /// The error for a second score in a player's round, naming the command that changes the first.
    func duplicateRound(_ taken: Score, of player: Player) throws -> ScorebookError {
        let name = try entity(Person.self, named: player.person)?.fullName ?? player.person
        let round = taken.round.map { "round \($0)" } ?? "that round"
        return ScorebookError(.invalidInput, "\(name) already has a score in \(round) (\(taken.recordName)); "
            + "change it with `\(ShellCommand.line(["scorebook", "score", "edit", taken.recordName])) VALUE`")
    }

    /// Deletes the entity `reference` names and, as the server will, everything that depends
    /// on it (a match's players and scores, a person's players and scores, a
    /// game's matches). Returns what was deleted, the named entity first.
    @discardableResult
    public func delete<E: CloudKitCompatible>(_ type: E.Type, reference: String) throws -> [DeletedRecord] {
        let entity = try resolve(type, reference)
        let deleted = try store.edit { editor in try editor.delete(recordNamed: entity.recordName) }
        return deleted.map {
            DeletedRecord(recordType: $0.recordType, recordName: $0.recordName,
                          displayName: Self.displayName(of: $0) ?? $0.recordName)
        }
    }

    /// A round as given: rounds are counted from 1.
    static func validRound(_ round: Int64?) throws -> Int64? {
        if let round, round < 1 { throw ScorebookError(.invalidInput, "rounds start at 1; --round \(round) is not a round") }
        return round
    }

    static func nonEmpty(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty ? nil : trimmed
    }
}
