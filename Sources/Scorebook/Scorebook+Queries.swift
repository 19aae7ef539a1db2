import Foundation
import RecordModel

extension Scorebook {
    /// Matches, oldest first, optionally of one game.
    public func matches(gameReference: String? = nil) throws -> [Match] {
        var matches = try all(Match.self)
        if let gameReference {
            let game = try resolve(Game.self, gameReference)
            matches = matches.filter { $0.game == game.recordName }
        }
        return matches.sorted { $0.startDate != $1.startDate ? $0.startDate < $1.startDate : $0.recordName < $1.recordName }
    }

    /// Totals, ranks and winner of a match.
    public func result(of match: Match) throws -> MatchResult {
        let game = try entity(Game.self, named: match.game)
        let players = try entities(Player.self, referencing: match.recordName).filter { $0.match == match.recordName }
        var names: [String: String] = [:]
        var scores: [Score] = []
        for player in players {
            names[player.person] = try entity(Person.self, named: player.person)?.fullName
            scores += try entities(Score.self, referencing: player.recordName).filter { $0.player == player.recordName }
        }
        return MatchResult.compute(match: match, lowScoreWins: game?.lowScoreWins ?? false, players: players,
                                   personNames: names, scores: scores)
    }

    /// Standings over every match, or one game's.
    public func standings(gameReference: String? = nil) throws -> [StandingsRow] {
        let inputs = try matches(gameReference: gameReference).map { Standings.MatchInput(match: $0, result: try result(of: $0)) }
        return Standings.compute(people: try all(Person.self), matches: inputs)
    }

    /// The name of a match's game, or its record name when the game is not here.
    public func gameName(of match: Match) throws -> String {
        try entity(Game.self, named: match.game)?.name ?? match.game
    }
}
