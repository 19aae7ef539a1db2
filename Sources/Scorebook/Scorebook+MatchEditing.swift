import Foundation
import RecordModel
import SyncEngine

/// A change to a match worked out before it is made, so that one that changes a finished
/// match's result is confirmed first, as a deletion that does is.
public struct MatchChangePreview: Sendable {
    /// What the change does, in words (`adding Grace to the finished match 9B1D2C3A changes its result`).
    public var summary: String
    /// Whether a finished match's result changes: a person must confirm it.
    public var needsConfirmation: Bool
}

/// Fixing a match after it started: its date, notes, place and game (`match edit`), and who
/// plays (`match player add|remove`).
extension Scorebook {
    /// What `editMatch` with these values would do to a finished result: only another game does
    /// (its scoring, and what the result is a result of).
    public func matchEditPreview(reference: String, gameReference: String?) throws -> MatchChangePreview {
        let match = try resolve(Match.self, reference)
        guard let gameReference else { return MatchChangePreview(summary: "", needsConfirmation: false) }
        let game = try resolve(Game.self, gameReference)
        let before = try gameName(of: match)
        let changes = match.isFinished && game.recordName != match.game
        return MatchChangePreview(
            summary: "changing the game of the finished match \(ReferenceResolver.shortID(of: match.recordName)) from \(before) to \(game.name) "
                + "changes its result",
            needsConfirmation: changes)
    }

    /// Changes a match's start date, notes (empty clears them), place (an empty name removes
    /// it) or game; nil leaves each as it is.
    @discardableResult
    public func editMatch(reference: String, date: Date? = nil, notes: String? = nil, location: MatchPlace? = nil,
                          gameReference: String? = nil) throws -> Match
    {
        try requireWritableBook()
        var match = try resolve(Match.self, reference)
        let game = try gameReference.map { try resolve(Game.self, $0) }
        let notes = try notes.map { try MatchPlace.validNotes($0) }
        let place = try location.flatMap { $0.name.trimmingCharacters(in: .whitespaces).isEmpty ? nil : try $0.validated() }
        guard date != nil || notes != nil || location != nil || game != nil else {
            throw ScorebookError(.invalidInput, "give what to change: --date, --notes, --location or --game")
        }
        let edited = now()
        if let date { match.startDate = date }
        if let notes { match.notes = notes }
        if let game { match.game = game.recordName }
        match.modificationDate = edited
        var saved: [any CloudKitCompatible] = [match]
        var removed: [String] = []
        if location != nil {
            let existing = try entities(MatchLocation.self, referencing: match.recordName).filter { $0.match == match.recordName }
            if let place {
                // The latest is edited in place; any other (two machines set one at once) goes.
                var kept = try self.location(of: match)
                    ?? MatchLocation(match: match.recordName, name: place.name, modificationDate: edited)
                kept.name = place.name
                kept.latitude = place.latitude
                kept.longitude = place.longitude
                kept.modificationDate = edited
                saved.append(kept)
                removed = existing.map(\.recordName).filter { $0 != kept.recordName }
            } else {
                removed = existing.map(\.recordName)
            }
        }
        try store.edit { editor in
            for entity in saved { try editor.save(Self.localRecord(of: entity)) }
            for name in removed { _ = try editor.delete(recordNamed: name) }
        }
        return match
    }

    /// What adding `personReference` to the match would change.
    public func playerAdditionPreview(matchReference: String, personReference: String) throws -> MatchChangePreview {
        let match = try resolve(Match.self, matchReference)
        let person = try resolve(Person.self, personReference)
        return MatchChangePreview(
            summary: "adding \(person.fullName) to the finished match \(ReferenceResolver.shortID(of: match.recordName)) changes its result",
            needsConfirmation: match.isFinished)
    }

    /// Seats a person in a match after its last seat (a late arrival); returns the new Player.
    @discardableResult
    public func addPlayer(matchReference: String, personReference: String) throws -> Player {
        try requireWritableBook()
        let match = try resolve(Match.self, matchReference)
        let person = try resolve(Person.self, personReference)
        let players = try entities(Player.self, referencing: match.recordName).filter { $0.match == match.recordName }
        guard !players.contains(where: { $0.person == person.recordName }) else {
            throw ScorebookError(.invalidInput, "\(person.fullName) already plays in this match")
        }
        let player = Player(match: match.recordName, person: person.recordName, seat: (players.map(\.seat).max() ?? 0) + 1,
                            modificationDate: now())
        try save([player])
        return player
    }

    /// What removing a player from the match would delete and change.
    public func playerRemovalPreview(matchReference: String, playerReference: String) throws -> MatchChangePreview {
        let match = try resolve(Match.self, matchReference)
        let player = try resolvePlayer(playerReference, in: match)
        let name = try entity(Person.self, named: player.person)?.fullName ?? player.person
        let scores = try entities(Score.self, referencing: player.recordName).filter { $0.player == player.recordName }.count
        var summary = "removing \(name) from the \(match.isFinished ? "finished " : "")match \(ReferenceResolver.shortID(of: match.recordName)) "
        summary += scores == 0 ? "deletes no score" : "deletes \(scores) score\(scores == 1 ? "" : "s")"
        if match.isFinished { summary += "; its result changes" }
        return MatchChangePreview(summary: summary, needsConfirmation: match.isFinished)
    }

    /// Removes a player (a wrong seat) with their scores from a match; returns what was deleted.
    @discardableResult
    public func removePlayer(matchReference: String, playerReference: String) throws -> [DeletedRecord] {
        try requireWritableBook()
        let match = try resolve(Match.self, matchReference)
        let player = try resolvePlayer(playerReference, in: match)
        let players = try entities(Player.self, referencing: match.recordName).filter { $0.match == match.recordName }
        guard players.count > 1 else {
            throw ScorebookError(.invalidInput, "a match needs at least one player; "
                + "'\(ShellCommand.line(["scorebook", "match", "delete", match.recordName]))' deletes the match")
        }
        var deleted = try delete(Player.self, reference: player.recordName)
        // Named for the person seated, not "seat 2".
        if let person = try entity(Person.self, named: player.person), !deleted.isEmpty { deleted[0].displayName = person.fullName }
        return deleted
    }
}
