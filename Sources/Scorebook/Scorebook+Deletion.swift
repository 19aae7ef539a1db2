import Foundation
import RecordModel

/// What deleting a record takes with it, worked out before anything is deleted, so that a
/// deletion that changes history (the result of a finished match) can be confirmed first.
public struct DeletionPreview: Equatable, Sendable {
    /// The record named for deletion.
    public var recordName: String
    public var recordType: String
    public var displayName: String
    /// How many records of each type go with it (the record itself included).
    public var counts: [String: Int]
    /// Finished matches deleted, or whose players or scores are: their results change.
    public var finishedMatchesAffected: Int

    /// Whether a person must confirm the deletion: it changes a finished match.
    public var needsConfirmation: Bool { finishedMatchesAffected > 0 }

    /// `deleting person "Ada Lovelace" (9B1D2C3A) deletes 2 players, 7 scores; finished match
    /// results change (2 matches)`.
    public var summary: String {
        let order = ["Game", "Match", "Player", "Score", "MatchImage", "MatchLocation", "Person"]
        let nouns = ["MatchImage": "photo", "MatchLocation": "location"]
        let parts = order.compactMap { type -> String? in
            guard let count = counts[type], count > 0, !(type == recordType && count == 1) else { return nil }
            let noun = nouns[type] ?? type.lowercased()
            return "\(count) \(noun)\(count == 1 ? "" : (noun.hasSuffix("ch") ? "es" : "s"))"
        }
        var text = "deleting \(recordType.lowercased()) \"\(displayName)\" (\(ReferenceResolver.shortID(of: recordName)))"
        text += parts.isEmpty ? " deletes nothing else" : " deletes " + parts.joined(separator: ", ")
        if finishedMatchesAffected > 0 {
            text += "; finished match results change (\(finishedMatchesAffected) match\(finishedMatchesAffected == 1 ? "" : "es"))"
        }
        return text
    }
}

extension Scorebook {
    /// What deleting the entity `reference` names would delete: the records that depend on it
    /// through `DELETE_SELF` references (a match's players and scores, a person's players and
    /// scores, a game's matches), and the finished matches whose results that changes.
    public func deletionPreview<E: CloudKitCompatible>(_ type: E.Type, reference: String) throws -> DeletionPreview {
        let named = try resolve(type, reference)
        var going: [String: Record] = [:]
        var pending = [named.recordName]
        if let record = try store.record(named: named.recordName) { going[record.recordName] = record }
        while let target = pending.popLast() {
            for record in try store.records(referencing: target) where going[record.recordName] == nil {
                let dependsOnTarget = record.references.contains { $0.reference.recordName == target && $0.reference.action == .deleteSelf }
                guard dependsOnTarget else { continue }
                going[record.recordName] = record
                pending.append(record.recordName)
            }
        }
        var counts: [String: Int] = [:]
        for record in going.values { counts[record.recordType, default: 0] += 1 }
        // The matches touched: those deleted, and those of deleted players.
        var touched = Set(going.values.filter { $0.recordType == Match.recordType }.map(\.recordName))
        for record in going.values where record.recordType == Player.recordType {
            if let player = try? Player(record: record) { touched.insert(player.match) }
        }
        let finished = try touched.filter { try entity(Match.self, named: $0)?.isFinished == true }
        return DeletionPreview(recordName: named.recordName, recordType: E.recordType, displayName: named.displayName,
                               counts: counts, finishedMatchesAffected: finished.count)
    }
}
