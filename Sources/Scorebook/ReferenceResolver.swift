import Foundation
import SyncEngine

/// Resolves a REF typed by a person: a record name, a unique display name, a unique other name
/// (a person's first name), or a unique prefix of the record name's UUID (at least
/// `shortestPrefix` characters, so that `Match|~|…`, which a shell would take for a pipeline,
/// never has to be typed) — in that order of precedence, so a person called "Bea" is found by
/// name even though "BEA" could start a UUID, and "Ada" finds the person called just Ada even
/// when Ada Lovelace exists.
public enum ReferenceResolver {
    /// The fewest characters of a UUID that name a record by prefix.
    public static let shortestPrefix = 4
    /// The characters of a UUID shown as a record's short id.
    public static let shortIDLength = 8

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

        /// `Ada Lovelace (9B1D2C3A)`: how a candidate is listed when a REF names several.
        public var listed: String { "\(displayName) (\(ReferenceResolver.shortID(of: recordName)))" }
    }

    public enum Resolution: Equatable, Sendable {
        case found(String)
        case notFound
        case ambiguous([Candidate])
    }

    /// The first characters of a record name's UUID: enough to name it as a REF.
    public static func shortID(of recordName: String) -> String {
        String(RecordNaming.identifier(ofRecordName: recordName).prefix(shortIDLength))
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
            (text.count >= shortestPrefix && RecordNaming.identifier(ofRecordName: candidate.recordName).uppercased().hasPrefix(upper))
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
