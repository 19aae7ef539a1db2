import Foundation
import RecordModel
import SyncEngine

/// A conflict a sync settled, as a person reads it.
public struct ConflictReport: Sendable {
    public var recordName: String
    /// What the record is: `Score "Ada, round 2"`.
    public var subject: String
    public var field: String
    public var kept: JSONValue
    public var lost: JSONValue
    /// Whether the kept value was this machine's own.
    public var keptLocal: Bool
    /// Whose value was kept (a user record name), and the other side's writer, when known.
    public var keptBy: String?
    public var lostBy: String?
}

/// Two scores for one player and round, entered on two machines, that met in a sync.
public struct DuplicateScore: Sendable {
    /// `Score "Ada, round 2"`.
    public var subject: String
    public var scores: [Score]
    /// Who entered each (a user record name; nil: this store's user).
    public var writers: [String?]
}

/// Describing what a sync or a watch did in the scorebook's own terms: whose score, in which
/// game, which round.
extension Scorebook {
    /// `Ada, round 2` for a score (the player's name, and its round when it has one).
    func scoreTitle(_ score: Score, in book: Scorebook? = nil) -> String {
        let book = book ?? self
        let person = (try? book.entity(Player.self, named: score.player)).flatMap { player in
            (try? book.entity(Person.self, named: player.person))?.map(\.fullName)
        }
        let name = person ?? "a player"
        return score.round.map { "\(name), round \($0)" } ?? name
    }

    /// How a record reads in a sentence: `Score "Ada, round 2"`, `Game "Catan"`.
    func subject(of record: Record, in book: Scorebook) -> String {
        if record.recordType == Score.recordType, let score = try? Score(record: record) {
            return "Score \"\(scoreTitle(score, in: book))\""
        }
        return "\(record.recordType) \"\(Self.displayName(of: record) ?? record.recordName)\""
    }

    /// The conflicts a sync settled, one per field, described.
    public func conflictReports(_ summary: SyncSummary) -> [ConflictReport] {
        let me = try? store.setting(SyncSettingKey.dataOwner)
        return summary.conflictDetails.map { detail in
            let book = bookOwning(detail.recordName)
            let theirs = detail.serverWriter
            return ConflictReport(recordName: detail.recordName, subject: subject(of: detail.record, in: book), field: detail.field,
                                  kept: Self.plainValue(detail.kept), lost: Self.plainValue(detail.lost), keptLocal: detail.keptLocal,
                                  keptBy: detail.keptLocal ? me ?? nil : theirs, lostBy: detail.keptLocal ? theirs : me ?? nil)
        }
    }

    /// The book of this store that holds a record (the record names are unique across books).
    func bookOwning(_ recordName: String) -> Scorebook {
        for summary in (try? store.books()) ?? [] {
            if let bookStore = try? store.opening(summary.book), (try? bookStore.record(named: recordName)) != nil {
                return Scorebook(store: bookStore, accounts: accounts)
            }
        }
        return self
    }

    /// A field's value without its type.
    static func plainValue(_ value: FieldValue?) -> JSONValue {
        value.map { $0.json["value"] ?? .null } ?? .null
    }

    /// Scores that a sync brought in for a player and round which already had one here.
    /// `saved`: the scores the sync saved, by book and record name, read back as they now are.
    func duplicateScores(among saved: [(LocalBook, String)]) -> [DuplicateScore] {
        var reports: [DuplicateScore] = []
        var seen: Set<String> = []
        var opened: [LocalBook: LocalRecordStore] = [:]
        for (localBook, recordName) in saved where !seen.contains(recordName) {
            guard let bookStore = opened[localBook] ?? (try? store.opening(localBook)) else { continue }
            opened[localBook] = bookStore
            let book = Scorebook(store: bookStore, accounts: accounts)
            guard let score = try? book.entity(Score.self, named: recordName), score.round != nil else { continue }
            let same = ((try? book.entities(Score.self, referencing: score.player)) ?? [])
                .filter { $0.round == score.round }.sorted { $0.recordName < $1.recordName }
            guard same.count > 1 else { continue }
            seen.formUnion(same.map(\.recordName))
            // nil: this store's user.
            let me = try? store.setting(SyncSettingKey.dataOwner)
            let writers = same.map { score -> String? in
                let writer = (try? bookStore.serverCopy(named: score.recordName))??.modified?.userRecordName
                return writer == me ? nil : writer
            }
            reports.append(DuplicateScore(subject: "Score \"\(scoreTitle(score, in: book))\"", scores: same, writers: writers))
        }
        return reports
    }

    /// How a remote change reads in a watch line: `saved Score 12 for Ada in Catan (round 2)`,
    /// `deleted Match Catan 2026-11-20`, `saved Person "Ada" (Person|~|…)`. A deletion is read
    /// from the local copy the change carries, else from the record name's type prefix.
    public func describeChange(_ change: AppliedChange, in localBook: LocalBook? = nil) -> String {
        let book = (localBook.flatMap { try? store.opening($0) }).map { Scorebook(store: $0, accounts: accounts) } ?? self
        let type = change.recordType.isEmpty ? (RecordNaming.recordType(fromRecordName: change.recordName) ?? "record") : change.recordType
        guard let record = change.record else { return "\(change.kind.rawValue) \(type) (\(change.recordName))" }
        if type == Score.recordType, let score = try? Score(record: record) {
            let player = try? book.entity(Player.self, named: score.player)
            let person = player.flatMap { try? book.entity(Person.self, named: $0.person) }?.map(\.fullName)
            let game = player.flatMap { try? book.entity(Match.self, named: $0.match) }?
                .flatMap { try? book.entity(Game.self, named: $0.game) }?.map(\.name)
            return "\(change.kind.rawValue) Score \(NumberText.format(score.value))" + (person.map { " for \($0)" } ?? "")
                + (game.map { " in \($0)" } ?? "") + (score.round.map { " (round \($0))" } ?? "")
        }
        if type == Player.recordType, let player = try? Player(record: record) {
            // A seat means little in a line: the person seated does.
            let person = ((try? book.entity(Person.self, named: player.person)) ?? nil)?.fullName
            let match = (try? book.entity(Match.self, named: player.match)) ?? nil
            let game = match.flatMap { (try? book.entity(Game.self, named: $0.game)) ?? nil }?.name
            return "\(change.kind.rawValue) Player \"\(person ?? "seat \(player.seat)")\" (seat \(player.seat)"
                + (game.map { " in \($0)" } ?? "") + ")"
        }
        if type == Match.recordType, let match = try? Match(record: record) {
            let game = (try? book.entity(Game.self, named: match.game))??.name
            return "\(change.kind.rawValue) Match \(game ?? "of") \(Self.dayFormatter.string(from: match.startDate))"
        }
        return Self.describe(change)
    }

    static let dayFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter
    }()
}

/// Invitations announced once each by `sync` and `sync --watch`.
extension Scorebook {
    static let announcedInvitationsKey = "announcedInvitations"

    /// The invitations not announced before; they count as announced from now on. Best effort:
    /// none when the server cannot be asked.
    public func newInvitations() async -> [BookInvitation] {
        guard (try? accounts.account()) != nil, let all = try? await invitations() else { return [] }
        let announced = Set((try? store.setting(Self.announcedInvitationsKey)).flatMap { $0 }
            .flatMap { try? JSONValue.parse($0) }?.arrayValue?.compactMap(\.stringValue) ?? [])
        let fresh = all.filter { !announced.contains($0.shortGUID) }
        guard !fresh.isEmpty else { return [] }
        // Only the current ones are kept, so the list does not grow with accepted invitations.
        let kept = Set(all.map(\.shortGUID)).sorted().map(JSONValue.string)
        try? store.setSetting(Self.announcedInvitationsKey, JSONValue.array(kept).serializedString())
        return fresh
    }

    /// `invitation: "friday" from alice — scorebook book accept friday`.
    public func invitationLine(_ invitation: BookInvitation, among all: [BookInvitation]) -> String {
        let title = invitation.title ?? invitation.zoneName
        let from = (try? userName(invitation.ownerRecordName)).flatMap { $0 } ?? invitation.ownerName ?? invitation.ownerRecordName
        // The title names it unless another invitation has the same one.
        let unique = all.filter { ($0.title ?? $0.zoneName) == title }.count == 1
        let reference = unique ? title : (invitation.url ?? invitation.shortGUID)
        return "invitation: \"\(title)\" from \(from) — " + ShellCommand.line(["scorebook", "book", "accept", reference])
    }
}

/// Books that left the store because the server no longer has them for this user.
extension Scorebook {
    /// For each shared book lost: `you no longer have the book friday from alice: alice
    /// deleted it, stopped sharing it or removed you`. The shared database answers the same
    /// in all three cases, so the line names the owner and the three.
    func sharedBookLostLines(_ summary: SyncSummary) -> [String] {
        summary.booksRemoved.compactMap { name in
            guard let owner = summary.sharedBooksLost[name] else { return nil }
            let who = shortName(owner)
            return "you no longer have the book \(name) from \(who): \(who) deleted it, stopped sharing it or removed you; it was removed here"
        }
    }

    /// A watch's lines for lost books: shared ones as above, the user's own as deleted on the server.
    func removedBookLines(_ summary: SyncSummary) -> [String] {
        summary.booksRemoved.filter { summary.sharedBooksLost[$0] == nil }.map { "book \($0) was deleted on the server and removed here" }
            + sharedBookLostLines(summary)
    }
}
