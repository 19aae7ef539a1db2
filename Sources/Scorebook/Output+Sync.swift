import Foundation
import RecordModel
import SyncEngine

/// What `status`, `sync` and `sync --watch` print.
extension Output {
    /// `status`: account, sync switch, last sync, pending changes (all books) and last error,
    /// then each book's own pending changes and last error.
    public static func status(_ status: SyncStatus, label: String? = nil, json: Bool) -> String {
        if json {
            return JSONText.render([
                "account": accountJSON(status.account), "syncEnabled": .bool(status.syncEnabled),
                "lastSync": status.lastSync.map { .string(ISO8601.string(from: $0)) } ?? .null,
                "pending": .int(Int64(status.pendingChanges)), "lastError": status.lastError.map(JSONValue.string) ?? .null,
                "books": .array(status.books.map { book in
                    ["name": .string(book.name), "pending": .int(Int64(book.pendingChanges)),
                     "lastError": book.lastError.map(JSONValue.string) ?? .null]
                }),
            ])
        }
        var lines = [
            "account: \(accountText(status.account, dataOwner: status.dataOwner, label: label))",
            "sync: \(status.syncEnabled ? "on" : "off")",
            "last sync: \(status.lastSync.map { LocalTime.string(from: $0) } ?? "never")",
            "pending changes: \(status.pendingChanges)",
            "last error: \(status.lastError.map(shown) ?? "none")",
        ]
        // Per book only when there is more than one, or something to say about it.
        if status.books.count > 1 {
            lines += status.books.map { book in
                "  \(shown(book.name)): \(book.pendingChanges) pending" + (book.lastError.map { "; last error: \(shown($0))" } ?? "")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// `sync`: the summary line, then one line per conflict settled, per score entered twice
    /// and per new invitation. JSON adds `conflictDetails`, `duplicateScores` and `invitations`.
    public static func syncReport(_ report: SyncReport, names: (String?) -> String?, json: Bool) -> String {
        if json {
            guard case .object(var members) = (try? JSONValue.parse(syncSummary(report.summary, json: true))) ?? .null else {
                return syncSummary(report.summary, json: true)
            }
            members["conflictDetails"] = .array(report.conflicts.map { conflict in
                ["recordName": .string(conflict.recordName), "field": .string(conflict.field), "kept": conflict.kept,
                 "lost": conflict.lost, "by": conflict.keptBy.map(JSONValue.string) ?? .null]
            })
            members["duplicateScores"] = .array(report.duplicates.map { duplicate in
                ["recordNames": .array(duplicate.scores.map { .string($0.recordName) }),
                 "values": .array(duplicate.scores.map { .double($0.value) }),
                 "by": .array(duplicate.writers.map { $0.map(JSONValue.string) ?? .null })]
            })
            members["invitations"] = .array(report.invitations.map(JSONValue.string))
            return JSONText.render(.object(members))
        }
        let lines = [syncSummary(report.summary, json: false)]
            + report.conflicts.map { conflictLine($0, names: names) }
            + report.duplicates.map { duplicateLine($0, names: names) }
            + report.booksLost
            + report.invitations
        return lines.map(shown).joined(separator: "\n")
    }

    /// `Score "Ada, round 2": kept 7 from bob, yours was 8`.
    static func conflictLine(_ conflict: ConflictReport, names: (String?) -> String?) -> String {
        let field = conflict.field == "value" ? "" : " \(conflict.field)"
        let kept = valueText(conflict.kept), lost = valueText(conflict.lost)
        if conflict.keptLocal {
            return "\(conflict.subject)\(field): kept yours, \(kept); \(names(conflict.lostBy) ?? "the other side")'s was \(lost)"
        }
        return "\(conflict.subject)\(field): kept \(kept) from \(names(conflict.keptBy) ?? "the server"), yours was \(lost)"
    }

    /// `Score "Ada, round 2" was entered twice: 7 by bob, 8 by you; delete one with 'scorebook score delete'`.
    static func duplicateLine(_ duplicate: DuplicateScore, names: (String?) -> String?) -> String {
        let entries = zip(duplicate.scores, duplicate.writers).map { score, writer in
            "\(NumberText.format(score.value)) by \(names(writer) ?? "you") (\(score.recordName))"
        }
        return "\(duplicate.subject) was entered \(duplicate.scores.count == 2 ? "twice" : "\(duplicate.scores.count) times"): "
            + entries.joined(separator: ", ")
    }

    /// A field's value in a sentence: numbers as `NumberText` writes them, text quoted.
    static func valueText(_ value: JSONValue) -> String {
        switch value {
        case .null: return "nothing"
        case .string(let text): return "\"\(text)\""
        default:
            if let number = value.doubleValue { return NumberText.format(number) }
            return value.serializedString()
        }
    }

    /// The first line of a watch: `watching 3 books as alice`.
    public static func watchStart(books: Int, user: String) -> String {
        shown("watching \(books) book\(books == 1 ? "" : "s") as \(user)")
    }

    /// The last line of a watch that ran its time: how many changes it applied.
    public static func watchSummary(seconds: Double, saved: Int, deleted: Int) -> String {
        "watched for \(NumberText.format(seconds)) s: \(saved) saved, \(deleted) deleted"
    }
}
