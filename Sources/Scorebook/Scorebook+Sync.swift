import Foundation
import RecordModel
import SyncEngine

extension Scorebook {
    /// Logs in to a server with a token; see docs/ACCOUNTS.md for whose data goes where.
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
            throw ScorebookError(.sync, error.description)
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
        do {
            let summary = try await accounts.syncPrivateBooks(onChange: { _, change in onChange(change) }, onProgress: onProgress)
            await learnWriterNames()
            return summary
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
    /// meanwhile included. `onChange` hears each change with the name of its book. The first
    /// sync reports its progress to `onInitialSyncProgress`. Returns why it stopped early when
    /// the store's account or sync switch changed meanwhile (nil when the time was up).
    @discardableResult
    public func watch(seconds: Double?, onChange: (_ book: String, AppliedChange) -> Void, onProblem: (String) -> Void,
                      onInitialSyncProgress: ((SyncProgress) -> Void)? = nil) async throws -> SyncStopped?
    {
        do {
            await learnParticipantNames()
            await learnWriterNames()
            return try await accounts.watchBooks(until: seconds.map { Date().addingTimeInterval($0) }, onChange: { book, change in
                onChange(bookName(book), change)
            }, onProblem: onProblem, onInitialSyncProgress: onInitialSyncProgress)
        } catch let error as SyncError {
            throw ScorebookError(.sync, error.description)
        }
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
