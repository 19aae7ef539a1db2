import Foundation
import RecordModel
import SyncEngine

extension Scorebook {
    /// Logs in to a server with a token; see docs/guide/accounts.md for whose data goes where.
    @discardableResult
    public func login(server: String, token: String, container: String = "iCloud.scorebook",
                      environment: String = "production") async throws -> SyncAccount
    {
        guard let url = URL(string: server), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
            throw ScorebookError(.invalidInput, "--server must be an http(s) URL, got \"\(server)\"")
        }
        guard !token.isEmpty else { throw ScorebookError(.invalidInput, "--token must not be empty") }
        do {
            return try await accounts.login(serverURL: url, container: container, environment: environment, token: token)
        } catch let error as SyncError {
            // The console's or the share page's address, pasted for the server's: no API answers below it.
            if error.description.contains("NOT_FOUND"), !["", "/"].contains(url.path),
               var root = URLComponents(url: url, resolvingAgainstBaseURL: false) {
                root.path = ""
                root.query = nil
                root.fragment = nil
                throw ScorebookError(.invalidInput, "\(server) is not the server's root URL; try --server \(root.string ?? server)")
            }
            throw ScorebookError(.sync, accountNamed(error.description))
        }
    }

    public func logout(deleteLocalData: Bool) throws {
        try accounts.logout(deleteLocalData: deleteLocalData)
    }

    public func setSyncEnabled(_ enabled: Bool) throws {
        try accounts.setSyncEnabled(enabled)
    }

    public func status() throws -> SyncStatus {
        try accounts.status()
    }

    /// One full sync cycle of every private book; `onChange` hears of each remote change applied, `onProgress` of the
    /// counts sent and received so far.
    @discardableResult
    public func sync(onChange: (AppliedChange) -> Void = { _ in },
                     onProgress: ((SyncProgress) -> Void)? = nil) async throws -> SyncSummary
    {
        try await syncAndReport(onChange: onChange, onProgress: onProgress).summary
    }

    /// A sync, with what a person is told about it: the conflicts it settled, scores entered
    /// twice that met, and invitations not announced before.
    public func syncAndReport(onChange: (AppliedChange) -> Void = { _ in },
                              onProgress: ((SyncProgress) -> Void)? = nil) async throws -> SyncReport
    {
        // Only what the duplicate-score check reads afterwards: a first sync of a big book
        // must not hold every record it applied.
        var scoresSaved: [(LocalBook, String)] = []
        do {
            let summary = try await accounts.syncPrivateBooks(onChange: { book, change in
                if change.kind == .saved, change.recordType == Score.recordType { scoresSaved.append((book, change.recordName)) }
                onChange(change)
            }, onProgress: onProgress)
            await learnWriterNames()
            let invitations = await newInvitations()
            let all = invitations.isEmpty ? [] : ((try? await self.invitations()) ?? invitations)
            return SyncReport(summary: summary, conflicts: conflictReports(summary), duplicates: duplicateScores(among: scoresSaved),
                              booksLost: sharedBookLostLines(summary),
                              invitations: invitations.map { invitationLine($0, among: all) })
        } catch let error as SyncError {
            throw ScorebookError(.sync, error.description)
        } catch let stopped as SyncStopped {
            // Another process logged out, logged in or turned sync off during this sync.
            throw ScorebookError(.sync, stopped.description)
        }
    }

    /// Syncs, then applies remote changes as they are announced and sends the edits other
    /// processes make on this store, for `seconds` (or until the task is cancelled), in every
    /// book of the store: its private books and the accepted shared ones, books that join
    /// meanwhile included. `onStart` hears how many books are watched and as whom; `onChange`
    /// each change with the name of its book and the line that describes it; `onInvitation`
    /// each new invitation's line; `onConnectionRestored` when the server answers again after
    /// a problem; `onBookJoined` the line of a book that joined meanwhile; `onSynced` the end of
    /// each sync, once new writers' names are looked up. The first sync reports its progress
    /// to `onInitialSyncProgress`. Returns why
    /// it stopped early when the store's account or sync switch changed meanwhile (nil when
    /// the time was up).
    @discardableResult
    public func watch(seconds: Double?, onStart: (_ books: Int, _ user: String) -> Void = { _, _ in },
                      onChange: (_ book: String, AppliedChange, _ line: String) -> Void, onProblem: (String) -> Void,
                      onInvitation: (String) -> Void = { _ in }, onConnectionRestored: () -> Void = {},
                      onBookJoined: (String) -> Void = { _ in }, onSynced: () -> Void = {},
                      onInitialSyncProgress: ((SyncProgress) -> Void)? = nil) async throws -> SyncStopped?
    {
        do {
            await learnParticipantNames()
            await learnWriterNames()
            if let account = try accounts.account() {
                onStart((try? books().count) ?? 1, (try? userName(account.userRecordName)).flatMap { $0 } ?? account.userRecordName)
            }
            func announceInvitations() async {
                let fresh = await newInvitations()
                guard !fresh.isEmpty else { return }
                let all = (try? await invitations()) ?? fresh
                for invitation in fresh { onInvitation(invitationLine(invitation, among: all)) }
            }
            await announceInvitations()
            return try await accounts.watchBooks(until: seconds.map { Date().addingTimeInterval($0) }, onChange: { book, change in
                onChange(bookName(book), change, describeChange(change, in: book))
            }, onProblem: onProblem, onConnectionRestored: onConnectionRestored, removedBookLines: removedBookLines,
               onIdle: announceInvitations,
               onBookJoined: { book in onBookJoined(joinedBookLine(book)) },
               // A writer first seen during the watch (a book shared meanwhile) is named from then on,
               // here and in the store for later commands; no request when every writer is known.
               afterSync: {
                   await learnWriterNames()
                   onSynced()
               },
               onInitialSyncProgress: onInitialSyncProgress)
        } catch let error as SyncError {
            throw ScorebookError(.sync, error.description)
        }
    }

    /// `watching friday too (shared by alice)`: a book that joined a running watch.
    func joinedBookLine(_ book: LocalBook) -> String {
        let owner = book.scope == .shared ? " (shared by \(shortName(book.ownerRecordName)))" : ""
        return "watching \(bookName(book)) too\(owner)"
    }

    /// How a book is named in output: a shared book by its title when known.
    public func bookName(_ book: LocalBook) -> String {
        guard book.scope == .shared else { return book.zoneName }
        let title = (try? store.books())?.first { $0.book == book }?.title
        return title ?? book.zoneName
    }

    /// Whether the store holds more than one book (watch lines then name theirs).
    public func hasSeveralBooks() -> Bool {
        ((try? store.books().filter { !$0.pendingDelete }.count) ?? 1) > 1
    }

    /// How a remote change reads: its type, its display name and its record name.
    public static func describe(_ change: AppliedChange) -> String {
        let type = change.recordType.isEmpty ? (RecordNaming.recordType(fromRecordName: change.recordName) ?? "record") : change.recordType
        let name = change.record.flatMap(displayName(of:))
        return "\(change.kind.rawValue) \(type)\(name.map { " \"\($0)\"" } ?? "") (\(change.recordName))"
    }
}

/// What `sync` tells a person: the counts, each conflict settled, scores entered twice, and
/// new invitations (each a line with the command that accepts it).
public struct SyncReport: Sendable {
    public var summary: SyncSummary
    public var conflicts: [ConflictReport]
    public var duplicates: [DuplicateScore]
    /// A line for each shared book this user lost.
    public var booksLost: [String]
    public var invitations: [String]
}
