import Foundation

/// A match's outcome: each player's total and rank, and the winner.
public struct MatchResult: Equatable, Sendable {
    public struct Row: Equatable, Sendable {
        /// The Player record.
        public var player: String
        /// The Person record.
        public var person: String
        public var name: String
        public var seat: Int64
        public var total: Double
        /// 1 for the best total; equal totals share a rank (1, 1, 3).
        public var rank: Int
    }

    /// Rows in rank order, then seat.
    public var rows: [Row]
    /// The winning Person's record name; nil while unfinished or when the best total is shared.
    public var winner: String?

    /// Totals each player's scores and ranks them, highest first (lowest first when
    /// `lowScoreWins`).
    public static func compute(match: Match, lowScoreWins: Bool, players: [Player], personNames: [String: String],
                               scores: [Score]) -> MatchResult
    {
        var totals: [String: Double] = [:]
        for score in scores { totals[score.player, default: 0] += score.value }
        func better(_ a: Double, _ b: Double) -> Bool { lowScoreWins ? a < b : a > b }
        var rows = players.map { player -> Row in
            let total = totals[player.recordName] ?? 0
            return Row(player: player.recordName, person: player.person, name: personNames[player.person] ?? player.person,
                       seat: player.seat, total: total, rank: 0)
        }
        for index in rows.indices {
            rows[index].rank = 1 + rows.filter { better($0.total, rows[index].total) }.count
        }
        rows.sort { $0.rank != $1.rank ? $0.rank < $1.rank : ($0.seat != $1.seat ? $0.seat < $1.seat : $0.player < $1.player) }
        let leaders = rows.filter { $0.rank == 1 }
        let winner = match.isFinished && leaders.count == 1 ? leaders[0].person : nil
        return MatchResult(rows: rows, winner: winner)
    }
}
