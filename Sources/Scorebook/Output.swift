import Foundation
import RecordModel
import SyncEngine

/// What each command prints, as text for people or (`json`) one JSON document
///. The CLI only prints these strings. Text shows times in the local time zone,
/// numbers as `NumberText` writes them, and anything that may have come from another machine
/// with its control characters escaped; JSON keeps UTC times, and its strings escape every
/// control character (`JSONText`).
public enum Output {
    /// After `add`/`start`: the new record name, or the entity.
    public static func created(_ entity: any CloudKitCompatible, json: Bool) -> String {
        json ? JSONText.render(entity.json) : entity.recordName
    }

    public static func people(_ people: [Person], json: Bool) -> String {
        if json { return JSONText.render(.array(people.map(\.json))) }
        let rows = people.map { [$0.fullName, $0.emailAddress ?? "", $0.recordName] }
        return TextTable(headers: ["NAME", "EMAIL", "RECORD NAME"], rows: rows).rendered
    }

    /// `book create` / `book delete`: what was done to which book.
    public static func bookChanged(_ action: String, _ name: String, json: Bool) -> String {
        json ? JSONText.render([action: .string(name)]) : "\(action) book \(shown(name))"
    }

    /// `book participants`: who, permission, accepted or invited.
    public static func participants(_ participants: [BookParticipant], json: Bool) -> String {
        if json {
            return JSONText.render(.array(participants.map { participant in
                ["userRecordName": participant.userRecordName.map { .string($0) } ?? .null,
                 "emailAddress": participant.emailAddress.map { .string($0) } ?? .null,
                 "name": participant.name.map { .string($0) } ?? .null, "type": .string(participant.type),
                 "permission": .string(participant.permission), "acceptanceStatus": .string(participant.acceptanceStatus)]
            }))
        }
        let rows = participants.map { participant in
            [participant.name ?? participant.emailAddress ?? participant.userRecordName ?? "?",
             participant.emailAddress ?? "", participant.type == "OWNER" ? "owner" : participant.permission.lowercased().replacingOccurrences(of: "_", with: "-"),
             participant.acceptanceStatus.lowercased(), participant.userRecordName ?? ""]
        }
        return TextTable(headers: ["WHO", "EMAIL", "PERMISSION", "STATUS", "USER RECORD NAME"], rows: rows).rendered
    }

    /// `book invitations`: the shares waiting to be accepted.
    public static func invitations(_ invitations: [BookInvitation], json: Bool) -> String {
        if json {
            return JSONText.render(.array(invitations.map { invitation in
                ["title": .string(invitation.title ?? invitation.zoneName), "zoneName": .string(invitation.zoneName),
                 "owner": .string(invitation.ownerRecordName), "ownerName": invitation.ownerName.map { .string($0) } ?? .null,
                 "permission": .string(invitation.permission), "shortGUID": .string(invitation.shortGUID),
                 "url": invitation.url.map { .string($0) } ?? .null]
            }))
        }
        let rows = invitations.map { invitation in
            [invitation.title ?? invitation.zoneName, invitation.ownerName ?? invitation.ownerRecordName,
             invitation.permission.lowercased().replacingOccurrences(of: "_", with: "-"), invitation.url ?? invitation.shortGUID]
        }
        return TextTable(headers: ["TITLE", "OWNER", "PERMISSION", "URL"], rows: rows).rendered
    }

    /// `book list`: NAME, OWNER, ROLE, records, last sync.
    /// `ownerLabels` shows an owner by name in text (`alice <alice@example.com>`); JSON keeps the user record name.
    public static func books(_ books: [LocalBookSummary], ownerLabels: [String: String] = [:], json: Bool) -> String {
        func owner(_ book: LocalBookSummary) -> String { book.book.ownerRecordName.isEmpty ? "me" : book.book.ownerRecordName }
        if json {
            return JSONText.render(.array(books.map { book in
                ["name": .string(book.title ?? book.book.zoneName), "zoneName": .string(book.book.zoneName),
                 "owner": .string(owner(book)), "role": .string(book.role), "records": .int(Int64(book.recordCount)),
                 "lastSync": book.lastSync.map { .string($0) } ?? .null]
            }))
        }
        let rows = books.map { book in
            [book.title ?? book.book.zoneName, ownerLabels[book.book.ownerRecordName] ?? owner(book), book.role, String(book.recordCount),
             book.lastSync.flatMap(ISO8601.date(from:)).map(day) ?? "never"]
        }
        return TextTable(headers: ["NAME", "OWNER", "ROLE", "RECORDS", "LAST SYNC"], rows: rows).rendered
    }

    public static func games(_ games: [Game], json: Bool) -> String {
        if json { return JSONText.render(.array(games.map(\.json))) }
        let rows = games.map { [$0.name, $0.lowScoreWins ? "low score wins" : "high score wins", $0.recordName] }
        return TextTable(headers: ["NAME", "SCORING", "RECORD NAME"], rows: rows).rendered
    }

    /// `catalog list`: the public catalogue's games.
    /// `catalog list`; `publishers` names each publisher in text (JSON keeps the user record name).
    public static func catalog(_ entries: [CatalogEntry], publishers: [String: String] = [:], json: Bool) -> String {
        if json { return JSONText.render(.array(entries.map(\.json))) }
        let rows = entries.map {
            [$0.name, $0.lowScoreWins ? "low score wins" : "high score wins", $0.publisher.map { publishers[$0] ?? $0 } ?? "-", $0.description]
        }
        return TextTable(headers: ["NAME", "SCORING", "PUBLISHER", "DESCRIPTION"], rows: rows).rendered
    }

    /// `catalog publish`: the entry's record name, or the entry.
    public static func published(_ entry: CatalogEntry, json: Bool) -> String {
        json ? JSONText.render(entry.json) : entry.recordName
    }

    /// `catalog unpublish`: which entry went.
    public static func unpublished(_ entry: CatalogEntry, json: Bool) -> String {
        json ? JSONText.render(["unpublished": .string(entry.recordName)]) : "unpublished \"\(shown(entry.name))\" from the catalogue"
    }

    /// One line of `match list`.
    public struct MatchLine {
        public var match: Match
        public var gameName: String
        public var result: MatchResult
        /// Where it was played (`match show`).
        public var location: MatchLocation?
        /// In a shared book, every score with who entered it (`match show`); nil otherwise.
        public var sharedScores: [ScoreLine]?
        /// The record names of its photos (`match show`).
        public var photos: [String] = []

        public init(match: Match, gameName: String, result: MatchResult, location: MatchLocation? = nil) {
            self.match = match
            self.gameName = gameName
            self.result = result
            self.location = location
        }
    }

    public static func matches(_ lines: [MatchLine], json: Bool) -> String {
        if json { return JSONText.render(.array(lines.map(\.match.json))) }
        let rows = lines.map { line -> [String] in
            let winner = line.result.winner.flatMap { person in line.result.rows.first { $0.person == person }?.name }
            return [line.gameName, day(line.match.startDate), line.match.isFinished ? "finished" : "in progress",
                    line.result.rows.sorted { $0.seat < $1.seat }.map(\.name).joined(separator: ", "), winner ?? "",
                    line.match.recordName]
        }
        return TextTable(headers: ["GAME", "STARTED", "STATUS", "PLAYERS", "WINNER", "RECORD NAME"], rows: rows).rendered
    }

    /// `match show`: the match, each player's total and rank, and the winner.
    public static func matchDetail(_ line: MatchLine, json: Bool) -> String {
        let match = line.match
        let result = line.result
        if json {
            guard case .object(var members) = match.json else { return JSONText.render(match.json) }
            members["players"] = .array(result.rows.map {
                ["recordName": .string($0.player), "person": .string($0.person), "name": .string($0.name),
                 "total": .double(NumberText.rounded($0.total)), "rank": .int(Int64($0.rank))]
            })
            members["winner"] = result.winner.map(JSONValue.string) ?? .null
            members["location"] = line.location.map(\.showJSON) ?? .null
            if !line.photos.isEmpty { members["photos"] = .array(line.photos.map(JSONValue.string)) }
            if let scores = line.sharedScores {
                members["scores"] = .array(scores.map { score in
                    ["recordName": .string(score.score.recordName), "name": .string(score.personName),
                     "round": score.score.round.map(JSONValue.int) ?? .null, "value": .double(score.score.value),
                     "enteredBy": score.enteredBy.map(JSONValue.string) ?? .null,
                     "enteredByName": score.enteredByName.map(JSONValue.string) ?? .null]
                })
            }
            return JSONText.render(.object(members))
        }
        var lines = ["\(shown(line.gameName)) — \(shown(match.recordName))"]
        lines.append("started \(LocalTime.string(from: match.startDate))"
            + (match.endDate.map { ", finished \(LocalTime.string(from: $0))" } ?? ", in progress"))
        if let notes = match.notes { lines.append("notes: \(shown(notes))") }
        if let location = line.location { lines.append("location: \(shown(location.showText))") }
        if !line.photos.isEmpty {
            lines.append("photos: \(line.photos.count) (\(ShellCommand.line(["scorebook", "match", "photos", match.recordName])))")
        }
        let rows = result.rows.map { [String($0.rank), $0.name, NumberText.format($0.total)] }
        lines.append(TextTable(headers: ["RANK", "PLAYER", "TOTAL"], rows: rows).rendered)
        if let scores = line.sharedScores, !scores.isEmpty {
            let entered = scores.map { score in
                [score.personName, score.score.round.map(String.init) ?? "-", NumberText.format(score.score.value),
                 score.enteredByName ?? score.enteredBy ?? "-"]
            }
            lines.append(TextTable(headers: ["PLAYER", "ROUND", "SCORE", "ENTERED BY"], rows: entered).rendered)
        }
        if let winner = result.winner, let row = result.rows.first(where: { $0.person == winner }) {
            lines.append("winner: \(shown(row.name))")
        } else {
            lines.append(match.isFinished ? "winner: none (tied)" : "winner: none yet (in progress)")
        }
        return lines.joined(separator: "\n")
    }

    public static func standings(_ rows: [StandingsRow], json: Bool) -> String {
        if json {
            return JSONText.render(.array(rows.map {
                ["person": .string($0.person), "name": .string($0.name), "played": .int(Int64($0.played)),
                 "won": .int(Int64($0.won)), "winRate": .double(NumberText.rounded($0.winRate)),
                 "averageScore": $0.averageScore.map { .double(NumberText.rounded($0)) } ?? .null]
            }))
        }
        let table = rows.map {
            [$0.name, String($0.played), String($0.won), "\(Int(($0.winRate * 100).rounded()))%",
             $0.averageScore.map { NumberText.format(($0 * 100).rounded() / 100) } ?? "-"]
        }
        return TextTable(headers: ["PERSON", "PLAYED", "WON", "WIN RATE", "AVERAGE SCORE"], rows: table).rendered
    }

    public static func deleted(_ records: [DeletedRecord], json: Bool) -> String {
        if json {
            return JSONText.render(["deleted": .array(records.map {
                ["recordName": .string($0.recordName), "recordType": .string($0.recordType)]
            })])
        }
        guard let first = records.first else { return "nothing deleted" }
        let rest = records.count - 1
        return "deleted \(shown(first.recordType)) \"\(shown(first.displayName))\" (\(shown(first.recordName)))"
            + (rest > 0 ? " and \(rest) record\(rest == 1 ? "" : "s") that depended on it" : "")
    }

    public static func syncSummary(_ summary: SyncSummary, json: Bool) -> String {
        if json {
            var members: [String: JSONValue] = [
                "sent": ["saved": .int(Int64(summary.sentSaved)), "deleted": .int(Int64(summary.sentDeleted))],
                "received": ["saved": .int(Int64(summary.receivedSaved)), "deleted": .int(Int64(summary.receivedDeleted))],
                "conflicts": .int(Int64(summary.conflicts)),
                "dropped": .array(summary.dropped.map { dropped in
                    ["recordName": .string(dropped.recordName), "recordType": .string(dropped.recordType),
                     "reason": .string(dropped.reason.rawValue)]
                }),
            ]
            if !summary.booksRemoved.isEmpty { members["booksRemoved"] = .array(summary.booksRemoved.map { .string($0) }) }
            // Only when pictures moved, so a summary without any reads as before.
            if summary.picturesUploaded + summary.picturesDownloaded > 0 {
                members["pictures"] = ["uploaded": .int(Int64(summary.picturesUploaded)), "downloaded": .int(Int64(summary.picturesDownloaded))]
            }
            return JSONText.render(.object(members))
        }
        return "sent \(summary.sentSaved) saved, \(summary.sentDeleted) deleted; "
            + "received \(summary.receivedSaved) saved, \(summary.receivedDeleted) deleted; \(summary.conflicts) conflict\(summary.conflicts == 1 ? "" : "s")"
            + droppedText(summary.dropped)
            // Shared books lost are told on lines of their own (`Output.syncReport`).
            + summary.booksRemoved.filter { summary.sharedBooksLost[$0] == nil }
            .map { "; book \(shown($0)) was deleted on the server and removed here" }.joined()
            + (summary.picturesUploaded + summary.picturesDownloaded > 0
                ? "; pictures: \(summary.picturesUploaded) uploaded, \(summary.picturesDownloaded) downloaded" : "")
    }

    /// The end of the summary line for local edits dropped because their record or its parent
    /// was deleted elsewhere: how many, and which.
    static func droppedText(_ dropped: [DroppedChange]) -> String {
        guard !dropped.isEmpty else { return "" }
        let shown = dropped.prefix(5).map { change in
            "\(change.recordType) \(change.recordName) (\(change.reason == .deleted ? "deleted" : "its parent was deleted") elsewhere)"
        }
        let more = dropped.count > shown.count ? ", and \(dropped.count - shown.count) more" : ""
        return "; \(dropped.count) local \(dropped.count == 1 ? "edit" : "edits") dropped: " + shown.joined(separator: ", ") + more
    }

    /// One line of `sync --watch` per applied remote change.
    /// One `sync --watch` line; `by` names another user who made the change (a shared book).
    /// A watch line; `book` names the change's book (text: `[friday] …`, JSON: `"book"`).
    /// `line` is how the change reads (`Scorebook.describeChange`); `writer` is the writer's name in text and
    /// `writerID` its user record name in JSON.
    public static func change(_ change: AppliedChange, line: String? = nil, by writer: String? = nil, writerID: String? = nil,
                              book: String? = nil, json: Bool) -> String
    {
        guard json else {
            return shown((book.map { "[\($0)] " } ?? "") + (line ?? Scorebook.describe(change)) + (writer.map { " by \($0)" } ?? ""))
        }
        let type = change.recordType.isEmpty ? (RecordNaming.recordType(fromRecordName: change.recordName) ?? "") : change.recordType
        var members: [String: JSONValue] = ["event": .string(change.kind.rawValue), "recordType": .string(type),
                                            "recordName": .string(change.recordName)]
        if let writer = writerID ?? writer { members["by"] = .string(writer) }
        if let book { members["book"] = .string(book) }
        return JSONText.render(.object(members))
    }

    static func accountJSON(_ account: SyncAccount?) -> JSONValue {
        guard let account else { return .null }
        return ["userRecordName": .string(account.userRecordName), "server": .string(account.serverURL.absoluteString),
                "container": .string(account.container), "environment": .string(account.environment)]
    }

    static func accountText(_ account: SyncAccount?, dataOwner: String?, label: String? = nil) -> String {
        guard let account else {
            // Logged out, `label` names the owner of the local data.
            return shown("not logged in" + (dataOwner.map { " (the local data belongs to \(label ?? $0))" } ?? ""))
        }
        return shown("\(label ?? account.userRecordName) at \(account.serverURL.absoluteString) (\(account.container), \(account.environment))")
    }

    /// `account status` (and the answer to `account login`).
    /// `label` names the user in text (`alice <alice@example.com>`).
    public static func account(_ status: SyncStatus, label: String? = nil, json: Bool) -> String {
        if json {
            var members: [String: JSONValue] = ["loggedIn": .bool(status.account != nil)]
            if case .object(let account) = accountJSON(status.account) { members.merge(account) { $1 } }
            members["dataOwner"] = status.dataOwner.map(JSONValue.string) ?? .null
            return JSONText.render(.object(members))
        }
        return accountText(status.account, dataOwner: status.dataOwner, label: label)
    }

    /// A start time in a table: local, to the minute, with the zone's offset.
    static func day(_ date: Date) -> String { LocalTime.string(from: date, seconds: false) }

    /// Text that may have come from another machine, as a line may show it: control characters
    /// escaped (`DisplayText.escapingControls`). Tables escape their cells themselves.
    static func shown(_ text: String) -> String { DisplayText.escapingControls(text) }
}
