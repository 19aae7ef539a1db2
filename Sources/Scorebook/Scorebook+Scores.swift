import Foundation
import RecordModel
import SyncEngine

/// One line of `score list`: a score with its player, the person playing, and who entered it.
public struct ScoreLine: Equatable, Sendable {
    public var score: Score
    public var player: Player
    public var personName: String
    /// The user record name of whoever entered the score's current value, or nil when unknown
    /// (a store that never logged in). See `Scorebook.enteredBy(_:)`.
    public var enteredBy: String?
    /// In a shared book, the name of whoever entered it (as looked up after a sync).
    public var enteredByName: String?
    /// Whoever entered it as the table shows them: by name when this store knows it, in any book.
    public var enteredByLabel: String?
}

extension Scorebook {
    /// Changes a score's value and, when given, its round. Refused in a finished match, and
    /// when the round is one the player already has another score in.
    @discardableResult
    public func editScore(reference: String, value: Double, round: Int64? = nil) throws -> Score {
        guard value.isFinite else { throw ScorebookError(.invalidInput, "a score must be a finite number") }
        _ = try Self.validRound(round)
        var score = try resolve(Score.self, reference)
        let player = try entity(Player.self, named: score.player)
        if let player, let match = try entity(Match.self, named: player.match) { try requireOpen(match) }
        if let round, round != score.round, let player {
            let others = try entities(Score.self, referencing: player.recordName)
                .filter { $0.player == player.recordName && $0.recordName != score.recordName }
            if let taken = others.first(where: { $0.round == round }) { throw try duplicateRound(taken, of: player) }
        }
        score.value = value
        if let round { score.round = round }
        score.modificationDate = now()
        try save([score])
        return score
    }

    /// Deletes a score; refused in a finished match.
    @discardableResult
    public func deleteScore(reference: String) throws -> [DeletedRecord] {
        let score = try resolve(Score.self, reference)
        if let player = try entity(Player.self, named: score.player), let match = try entity(Match.self, named: player.match) {
            try requireOpen(match)
        }
        return try delete(Score.self, reference: score.recordName)
    }

    /// The record name of the score a player of a match has in a round: a score named by its
    /// place (`score edit --match M --player P --round N`).
    public func scoreReference(matchReference: String, playerReference: String, round: Int64) throws -> String {
        _ = try Self.validRound(round)
        let match = try resolve(Match.self, matchReference)
        let player = try resolvePlayer(playerReference, in: match)
        let scores = try entities(Score.self, referencing: player.recordName).filter { $0.player == player.recordName && $0.round == round }
        guard let score = scores.min(by: { $0.recordName < $1.recordName }) else {
            let name = try entity(Person.self, named: player.person)?.fullName ?? player.person
            throw ScorebookError(.badReference, "\(name) has no score in round \(round) of this match")
        }
        return score.recordName
    }

    /// A match's scores by round, then seat.
    public func scoreLines(of match: Match) throws -> [ScoreLine] {
        let players = try entities(Player.self, referencing: match.recordName).filter { $0.match == match.recordName }
        var lines: [ScoreLine] = []
        let shared = try isSharedBook()
        for player in players {
            let name = try entity(Person.self, named: player.person)?.fullName ?? player.person
            for score in try entities(Score.self, referencing: player.recordName) where score.player == player.recordName {
                let writer = try enteredBy(score)
                lines.append(ScoreLine(score: score, player: player, personName: name, enteredBy: writer,
                                       enteredByName: shared ? try writerName(writer) : nil, enteredByLabel: try writerName(writer)))
            }
        }
        return lines.sorted {
            let (left, right) = ($0.score.round ?? .max, $1.score.round ?? .max)
            if left != right { return left < right }
            if $0.player.seat != $1.player.seat { return $0.player.seat < $1.player.seat }
            return $0.score.recordName < $1.score.recordName
        }
    }

    /// Who entered a record's current state: the server's `modified.userRecordName` when the
    /// local copy is the server's copy (the value came from, or was acknowledged by, the
    /// server); otherwise it was entered here, by the store's owner (the account logged in,
    /// or last logged in); nil when this store never logged in.
    public func enteredBy(_ entity: some CloudKitCompatible) throws -> String? {
        if let copy = try store.serverCopy(named: entity.recordName), let user = copy.modified?.userRecordName,
           let serverEntity = try? type(of: entity).init(record: copy), Self.sameContent(serverEntity, entity)
        {
            return user
        }
        return try store.setting(SyncSettingKey.dataOwner)
    }

    /// Whether two versions of an entity hold the same fields, compared as `--json` shows them.
    static func sameContent(_ left: some CloudKitCompatible, _ right: some CloudKitCompatible) -> Bool {
        left.json == right.json
    }

    /// Where a match was played: its MatchLocation (the latest edited, should sync have
    /// brought several), or nil.
    public func location(of match: Match) throws -> MatchLocation? {
        try entities(MatchLocation.self, referencing: match.recordName).filter { $0.match == match.recordName }
            .max { $0.modificationDate != $1.modificationDate ? $0.modificationDate < $1.modificationDate : $0.recordName < $1.recordName }
    }

    /// The rounds of a match by player, for `match show --rounds`.
    public func rounds(of match: Match) throws -> MatchRounds {
        let players = try entities(Player.self, referencing: match.recordName).filter { $0.match == match.recordName }
            .sorted { $0.seat != $1.seat ? $0.seat < $1.seat : $0.recordName < $1.recordName }
        var columns: [MatchRounds.Column] = []
        var scores: [Score] = []
        for player in players {
            let name = try entity(Person.self, named: player.person)?.fullName ?? player.person
            columns.append(MatchRounds.Column(player: player.recordName, person: player.person, name: name))
            scores += try entities(Score.self, referencing: player.recordName).filter { $0.player == player.recordName }
        }
        return MatchRounds.compute(columns: columns, scores: scores)
    }
}

extension ScoreLine {
    /// `score list`: a table, or (`json`) `[{"recordName", "player", "person", "name", "round",
    /// "value", "enteredBy"}]`.
    public static func render(_ lines: [ScoreLine], json: Bool) -> String {
        if json {
            return JSONText.render(.array(lines.map { line -> JSONValue in
                var members: [String: JSONValue] = [
                    "recordName": .string(line.score.recordName), "player": .string(line.player.recordName),
                    "person": .string(line.player.person), "name": .string(line.personName),
                    "round": line.score.round.map(JSONValue.int) ?? .null, "value": .double(line.score.value),
                    "enteredBy": line.enteredBy.map(JSONValue.string) ?? .null,
                ]
                // Only in a shared book, so the unshared shape stays as it was.
                if let name = line.enteredByName { members["enteredByName"] = .string(name) }
                return .object(members)
            }))
        }
        let rows = lines.map {
            [$0.score.recordName, $0.personName, $0.score.round.map(String.init) ?? "-", NumberText.format($0.score.value),
             $0.enteredByLabel ?? $0.enteredByName ?? $0.enteredBy ?? "-"]
        }
        return TextTable(headers: ["RECORD NAME", "PLAYER", "ROUND", "VALUE", "ENTERED BY"], rows: rows).rendered
    }
}
