import Foundation

/// One person's line in the standings.
public struct StandingsRow: Equatable, Sendable {
    public var person: String
    public var name: String
    /// Finished matches the person took part in.
    public var played: Int
    /// Finished matches the person won outright.
    public var won: Int
    /// `won / played`, 0 when nothing was played.
    public var winRate: Double
    /// The mean of the person's totals in finished matches; nil when nothing was played.
    public var averageScore: Double?
}

/// Standings over a set of matches: per person, matches played and won, win rate and average
/// total, best first. Only finished matches count: a match in progress has no result yet, and
/// counting it would lower every player's win rate until it ends.
public enum Standings {
    public struct MatchInput: Sendable {
        public var match: Match
        public var result: MatchResult

        public init(match: Match, result: MatchResult) {
            self.match = match
            self.result = result
        }
    }

    public static func compute(people: [Person], matches: [MatchInput]) -> [StandingsRow] {
        var rows = people.map { person -> StandingsRow in
            var played = 0
            var won = 0
            var totals: [Double] = []
            for input in matches where input.match.isFinished {
                guard let row = input.result.rows.first(where: { $0.person == person.recordName }) else { continue }
                played += 1
                totals.append(row.total)
                if input.result.winner == person.recordName { won += 1 }
            }
            return StandingsRow(person: person.recordName, name: person.fullName, played: played, won: won,
                                winRate: played > 0 ? Double(won) / Double(played) : 0,
                                averageScore: totals.isEmpty ? nil : totals.reduce(0, +) / Double(totals.count))
        }
        rows.sort {
            if $0.won != $1.won { return $0.won > $1.won }
            if $0.winRate != $1.winRate { return $0.winRate > $1.winRate }
            if $0.played != $1.played { return $0.played > $1.played }
            return $0.name.lowercased() != $1.name.lowercased() ? $0.name.lowercased() < $1.name.lowercased() : $0.person < $1.person
        }
        return rows
    }
}
