import Foundation
import RecordModel

/// A match's scores as a grid: one row per round, one column per player (seat order).
public struct MatchRounds: Equatable, Sendable {
    public struct Column: Equatable, Sendable {
        /// The Player record.
        public var player: String
        /// The Person record.
        public var person: String
        public var name: String
    }

    public struct Row: Equatable, Sendable {
        /// nil for scores entered without a round.
        public var round: Int64?
        /// Each column's points in this round (summed should sync have brought two), by Player
        /// record name; a player without a score in the round is absent.
        public var values: [String: Double]
        /// The players (Player record names) with more than one score in this round: two
        /// machines entered it at once, and `values` holds their sum.
        public var enteredTwice: Set<String> = []
    }

    public var columns: [Column]
    /// Rounds in order, scores without a round last.
    public var rows: [Row]

    static func compute(columns: [Column], scores: [Score]) -> MatchRounds {
        var byRound: [Int64?: [String: Double]] = [:]
        var counts: [Int64?: [String: Int]] = [:]
        for score in scores {
            byRound[score.round, default: [:]][score.player, default: 0] += score.value
            counts[score.round, default: [:]][score.player, default: 0] += 1
        }
        // Scores without a round are many by nature; only a numbered round entered twice is marked.
        let rows = byRound.keys.sorted { ($0 ?? .max, $0 == nil ? 1 : 0) < ($1 ?? .max, $1 == nil ? 1 : 0) }
            .map { round in
                Row(round: round, values: byRound[round] ?? [:],
                    enteredTwice: round == nil ? [] : Set((counts[round] ?? [:]).filter { $0.value > 1 }.keys))
            }
        return MatchRounds(columns: columns, rows: rows)
    }

    /// The grid as a table, with a TOTAL row of each player's total from `result` (the totals
    /// `match show` prints).
    public func table(totals result: MatchResult) -> TextTable {
        let totals = Dictionary(result.rows.map { ($0.player, $0.total) }, uniquingKeysWith: { first, _ in first })
        var rows = self.rows.map { row in
            [row.round.map(String.init) ?? "-"] + columns.map { column in
                row.values[column.player].map { NumberText.format($0) + (row.enteredTwice.contains(column.player) ? " (×2)" : "") } ?? ""
            }
        }
        rows.append(["TOTAL"] + columns.map { NumberText.format(totals[$0.player] ?? 0) })
        return TextTable(headers: ["ROUND"] + columns.map(\.name), rows: rows)
    }

    /// `"rounds"` of `match show --rounds --json`: `[{"round", "scores": {PLAYER: value}}]`.
    public var json: JSONValue {
        .array(rows.map { row -> JSONValue in
            var members: [String: JSONValue] = ["round": row.round.map(JSONValue.int) ?? .null,
                                                "scores": .object(row.values.mapValues(JSONValue.double))]
            if !row.enteredTwice.isEmpty { members["enteredTwice"] = .array(row.enteredTwice.sorted().map(JSONValue.string)) }
            return .object(members)
        })
    }
}
