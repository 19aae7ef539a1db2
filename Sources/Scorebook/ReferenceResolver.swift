import Foundation
import SyncEngine

/// Resolves a REF typed by a person (CONTRACT §4.1): a record name, a unique display name, a
/// unique other name (a person's first name), or a unique prefix of the record name's UUID — in
/// that order of precedence, so a person called "Bea" is found by name even though "BEA" could
/// start a UUID, and "Ada" finds the person called just Ada even when Ada Lovelace exists.
public enum ReferenceResolver {
    public struct Candidate: Equatable, Sendable {
        public var recordName: String
        /// Names the entity answers to (compared without regard to case).
        public var names: [String]
        public var displayName: String

        public init(recordName: String, names: [String], displayName: String) {
            self.recordName = recordName
            self.names = names
            self.displayName = displayName
        }
    }

    public enum Resolution: Equatable, Sendable {
        case found(String)
        case notFound
        case ambiguous([Candidate])
    }

    public static func resolve(_ reference: String, among candidates: [Candidate]) -> Resolution {
        let text = reference.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return .notFound }
        if let exact = candidates.first(where: { $0.recordName == text }) { return .found(exact.recordName) }
        let folded = text.lowercased()
        // The whole display name first: a person called just "Ada" is "Ada" even when
        // "Ada Lovelace" (first name Ada) exists too.
        let byName = candidates.filter { candidate in candidate.names.contains { $0.lowercased() == folded } }
        if let result = single(byName.filter { $0.displayName.lowercased() == folded }) { return result }
        if let result = single(byName) { return result }
        let upper = text.uppercased()
        let byPrefix = candidates.filter { candidate in
            RecordNaming.identifier(ofRecordName: candidate.recordName).uppercased().hasPrefix(upper)
                || (text.contains(RecordNaming.separator) && candidate.recordName.uppercased().hasPrefix(upper))
        }
        return single(byPrefix) ?? .notFound
    }

    private static func single(_ matches: [Candidate]) -> Resolution? {
        switch matches.count {
        case 0: return nil
        case 1: return .found(matches[0].recordName)
        default: return .ambiguous(matches)
        }
    }
}
