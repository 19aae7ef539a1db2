import Foundation
import RecordClient
import RecordModel
import SyncEngine

/// A participant of a shared book, as `book participants` shows it.
public struct BookParticipant: Sendable {
    public var userRecordName: String?
    public var emailAddress: String?
    public var name: String?
    public var type: String
    public var permission: String
    public var acceptanceStatus: String
}

/// A share that invites the user and that the user has not accepted.
public struct BookInvitation: Sendable {
    public var shortGUID: String
    public var url: String?
    public var zoneName: String
    public var ownerRecordName: String
    public var ownerName: String?
    public var title: String?
    public var permission: String
}

/// Sharing a book: the share record in the owner's zone, invitations, accepting and leaving
///. These talk to the server at once; they need a login.
extension Scorebook {
    static let shareRecordName = RecordClient.zoneShareRecordName

    /// A client of the logged-in account's server.
    func accountClient() throws -> RecordClient {
        guard let account = try accounts.account() else {
            throw ScorebookError(.sync, "not logged in; run 'scorebook account login --server URL --token TOKEN' first")
        }
        return RecordClient(endpoint: account.endpoint)
    }

    /// Runs a server call, turning its failure into one line.
    func talking<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ScorebookError {
            throw error
        } catch let error as RecordClientError {
            throw ScorebookError(.sync, error.description)
        } catch {
            throw ScorebookError(.sync, String(describing: error))
        }
    }

    /// This book, which must be one of the user's own (private) books.
    func ownedBook(_ action: String) throws -> LocalBook {
        guard store.book.scope == .private else {
            throw ScorebookError(.invalidInput, "only the owner can \(action) the book \(store.book.zoneName)")
        }
        return store.book
    }

    /// The share record of an owned book, or nil when it is not shared.
    func currentShare(_ client: RecordClient, zone: ZoneID, database: String = "private") async throws -> JSONValue? {
        let answer = try await client.call("records/lookup", [
            "zoneID": zone.json, "records": [["recordName": .string(Self.shareRecordName)]],
        ], database: database)
        guard let entry = answer["records"]?.arrayValue?.first, entry["serverErrorCode"] == nil else { return nil }
        return entry
    }

    static func participants(of share: JSONValue) -> [BookParticipant] {
        (share["participants"]?.arrayValue ?? []).map { participant in
            let identity = participant["userIdentity"]
            return BookParticipant(
                userRecordName: identity?["userRecordName"]?.stringValue,
                emailAddress: identity?["lookupInfo"]?["emailAddress"]?.stringValue,
                name: identity?["nameComponents"]?["givenName"]?.stringValue,
                type: participant["type"]?.stringValue ?? "USER",
                permission: participant["permission"]?.stringValue ?? "",
                // The CLI keeps saying "invited" for CloudKit's PENDING.
                acceptanceStatus: participant["acceptanceStatus"]?.stringValue.map { $0 == "PENDING" ? "INVITED" : $0 } ?? "")
        }
    }

    /// Whether a participant is the one `who` (an email or a user record name) names.
    static func participant(_ participant: BookParticipant, is who: String) -> Bool {
        participant.userRecordName == who || participant.emailAddress?.lowercased() == who.lowercased()
    }

    static func lookupInfo(for who: String) -> JSONValue {
        who.contains("@") ? ["emailAddress": .string(who)] : ["userRecordName": .string(who)]
    }

    /// Saves the share of an owned book with `participants` (the whole new list).
    /// The title is `title`, else the share's current one, else the book's.
    func saveShare(_ client: RecordClient, zone: ZoneID, existing: JSONValue?, participants: [JSONValue],
                   title: String? = nil) async throws -> JSONValue
    {
        let title = title ?? existing?["fields"]?["cloudkit.title"]?["value"]?.stringValue
            ?? (try? store.bookSummary())??.title ?? zone.zoneName
        return try await client.saveZoneShare(zone: zone, title: title, participants: participants, existing: existing)
    }

    /// The participants to save again: every current one but the owner, by user record name.
    static func keptParticipants(_ share: JSONValue?, dropping who: String) -> [JSONValue] {
        (share?["participants"]?.arrayValue ?? []).compactMap { entry in
            let participant = participants(of: ["participants": [entry]])[0]
            guard participant.type != "OWNER", !Self.participant(participant, is: who) else { return nil }
            let lookup: JSONValue = participant.userRecordName.map { ["userRecordName": .string($0)] }
                ?? entry["userIdentity"]?["lookupInfo"] ?? [:]
            return ["type": "USER", "permission": .string(participant.permission), "userIdentity": ["lookupInfo": lookup]]
        }
    }

    /// Shares this (owned) book with `who` (an email or a user record name): the share URL, and
    /// whether no user has that email yet (the invitation then waits for one to be created).
    public func shareBook(with who: String, readOnly: Bool) async throws -> (url: String, waitsForUser: Bool) {
        let book = try ownedBook("share")
        guard !who.isEmpty else { throw ScorebookError(.invalidInput, "--with needs an email or a user record name") }
        let client = try accountClient()
        let url = try await talking {
            // The zone must exist on the server before its share can: creating it again is harmless.
            try await client.createZone(book.zoneID)
            let existing = try await currentShare(client, zone: book.zoneID)
            let participants = Self.keptParticipants(existing, dropping: who) + [[
                "type": "USER", "permission": .string(readOnly ? "READ_ONLY" : "READ_WRITE"),
                "acceptanceStatus": "PENDING", "userIdentity": ["lookupInfo": Self.lookupInfo(for: who)],
            ]]
            let saved = try await saveShare(client, zone: book.zoneID, existing: existing, participants: participants)
            return saved["url"]?.stringValue ?? saved["shortGUID"]?.stringValue ?? ""
        }
        let waits = who.contains("@") ? await userExists(email: who) == false : false
        return (url, waits)
    }

    /// Removes `who` (an email, a user record name, or the name `book participants` shows) from
    /// this (owned) book's share, or everyone but the owner when `who` is nil; returns how the
    /// removed people are named.
    @discardableResult
    public func unshareBook(with who: String?) async throws -> [String] {
        let book = try ownedBook("unshare")
        let client = try accountClient()
        return try await talking {
            let existing = try await currentShare(client, zone: book.zoneID)
            let others = existing.map(Self.participants(of:))?.filter { $0.type != "OWNER" } ?? []
            guard let who else {
                guard let existing, !others.isEmpty else {
                    throw ScorebookError(.invalidInput, "the book \(book.zoneName) is not shared with anyone")
                }
                _ = try await saveShare(client, zone: book.zoneID, existing: existing, participants: [])
                return others.map(participantLabel)
            }
            let matching = others.filter { participant($0, isNamed: who) }
            guard let existing, let removed = matching.first else {
                throw ScorebookError(.invalidInput, "the book \(book.zoneName) is not shared with \(who)")
            }
            guard matching.count == 1 else {
                throw ScorebookError(.badReference, "\"\(who)\" names \(matching.count) participants: "
                    + matching.map(participantLabel).joined(separator: ", ") + "; give an email")
            }
            // Dropped by the identity the share knows them by, whatever `who` said.
            let key = removed.userRecordName ?? removed.emailAddress ?? who
            _ = try await saveShare(client, zone: book.zoneID, existing: existing,
                                    participants: Self.keptParticipants(existing, dropping: key))
            return [participantLabel(removed)]
        }
    }

    /// Whether `who` names a participant: its email or user record name, or its name or email as
    /// this store knows it (what `book participants` shows).
    func participant(_ participant: BookParticipant, isNamed who: String) -> Bool {
        if Self.participant(participant, is: who) { return true }
        if participant.name?.lowercased() == who.lowercased() { return true }
        guard let id = participant.userRecordName else { return false }
        return userRecordNames(named: who).contains(id)
    }

    /// A participant by name (`bob`): what the share says, else what this store knows of them.
    func participantLabel(_ participant: BookParticipant) -> String {
        participant.name ?? participant.userRecordName.flatMap { try? userName($0) } ?? participant.emailAddress
            ?? participant.userRecordName ?? "?"
    }

    /// Who takes part in this book: the owner asks its private database, a participant its
    /// shared one (the server shows the share to everyone in it).
    public func bookParticipants() async throws -> [BookParticipant] {
        let client = try accountClient()
        let database = store.book.scope == .shared ? "shared" : "private"
        return try await talking {
            guard let share = try await currentShare(client, zone: store.book.zoneID, database: database) else { return [] }
            return Self.participants(of: share)
        }
    }

    /// The shares that invite the user and that it has not accepted.
    public func invitations() async throws -> [BookInvitation] {
        let client = try accountClient()
        return try await talking {
            let answer = try await client.call("invitations/list", [:], database: "shared")
            return (answer["invitations"]?.arrayValue ?? []).compactMap { entry in
                guard let guid = entry["shortGUID"]?.stringValue, let zone = entry["zoneID"]?["zoneName"]?.stringValue else { return nil }
                rememberUser(entry["owner"])
                return BookInvitation(
                    shortGUID: guid, url: entry["url"]?.stringValue, zoneName: zone,
                    ownerRecordName: entry["zoneID"]?["ownerRecordName"]?.stringValue ?? entry["owner"]?["userRecordName"]?.stringValue ?? "",
                    ownerName: entry["owner"]?["name"]?.stringValue, title: entry["title"]?.stringValue,
                    permission: entry["permission"]?.stringValue ?? "")
            }
        }
    }

    /// Accepts a share named by its URL, its short GUID or an invitation's title (or zone
    /// name); the book joins this store and comes with the next sync. Returns its name.
    public func acceptBook(_ reference: String) async throws -> String {
        let client = try accountClient()
        return try await talking {
            var guid = reference
            if let url = URL(string: reference), url.scheme != nil { guid = url.lastPathComponent }
            let invitations = try await invitations()
            let named = invitations.filter { $0.title == reference || $0.zoneName == reference }
            if named.count > 1 {
                throw ScorebookError(.badReference, "\"\(reference)\" names \(named.count) invitations; accept by URL")
            }
            if let only = named.first { guid = only.shortGUID }
            let answer = try await client.call("records/accept", ["shortGUIDs": [["value": .string(guid)]]], database: "public")
            guard let result = answer["results"]?.arrayValue?.first, result["serverErrorCode"] == nil,
                  let zone = result["zoneID"]?["zoneName"]?.stringValue
            else {
                throw ScorebookError(.badReference, "no invitation matches \"\(reference)\"")
            }
            let owner = result["zoneID"]?["ownerRecordName"]?.stringValue ?? ""
            let permission = result["participantPermission"]?.stringValue ?? "READ_WRITE"
            let title = result["share"]?["fields"]?["cloudkit.title"]?["value"]?.stringValue
                ?? invitations.first { $0.shortGUID == guid }?.title
            let bookStore = try store.opening(LocalBook(scope: .shared, zoneName: zone, ownerRecordName: owner))
            try bookStore.setBookDetails(title: title, role: permission == "READ_ONLY" ? "read-only" : "read-write")
            return title ?? zone
        }
    }

    /// Leaves this shared book: the server forgets the user as a participant, and the book
    /// leaves this store (unsent edits with it).
    public func leaveBook() async throws {
        guard store.book.scope == .shared else {
            throw ScorebookError(.invalidInput, "\(store.book.zoneName) is your own book; 'scorebook book delete' deletes it")
        }
        let client = try accountClient()
        try await talking {
            let answer = try await client.call("records/modify", [
                "zoneID": store.book.zoneID.json,
                "operations": [["operationType": "forceDelete", "record": ["recordName": .string(Self.shareRecordName)]]],
            ], database: "shared")
            if let code = answer["records"]?.arrayValue?.first?["serverErrorCode"]?.stringValue, code != "NOT_FOUND" {
                throw ScorebookError(.sync, "the server refused to let you leave (\(code))")
            }
        }
        try store.forgetBook()
    }
}

extension Scorebook {
    /// Whether this book is shared as far as this store can tell: it is someone else's, or
    /// someone other than the store's user wrote in it.
    public func isSharedBook() throws -> Bool {
        if store.book.scope == .shared { return true }
        guard let me = try store.setting(SyncSettingKey.dataOwner) else { return false }
        return try store.writerUserRecordNames().contains { $0 != me }
    }

    /// How a writer shows in a shared book: its name when looked up, else its user record name.
    public func writerName(_ userRecordName: String?) throws -> String? {
        guard let userRecordName else { return nil }
        return try userName(userRecordName) ?? userRecordName
    }
}

extension Scorebook {
    /// Who made a remote change (a user record name) when it is someone other than the store's
    /// user, which happens only in a shared book. A deletion's is its deleter, when the server
    /// said; never the deleted record's last writer, who may not be the one who deleted it.
    public func otherWriterID(of change: AppliedChange) -> String? {
        let author = change.kind == .deleted ? change.deletedBy : change.record?.modified?.userRecordName
        guard let writer = author,
              let me = try? store.setting(SyncSettingKey.dataOwner), writer != me
        else { return nil }
        return writer
    }

    /// Learns the names of the participants of the user's shared books from their share
    /// records; best effort, before a watch, so its lines name a participant's first change.
    func learnParticipantNames() async {
        guard let client = try? accountClient(), let books = try? store.books() else { return }
        for summary in books where summary.book.scope == .private && !summary.pendingDelete {
            guard let share = try? await currentShare(client, zone: summary.book.zoneID) else { continue }
            for participant in Self.participants(of: share) {
                guard let id = participant.userRecordName else { continue }
                rememberUser(id, name: participant.name, email: participant.emailAddress)
            }
        }
    }
}
