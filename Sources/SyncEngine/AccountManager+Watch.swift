import Foundation
import RecordClient
import RecordModel

extension AccountManager {
    /// The subscriptions of an account-wide watch: one per book's zone (`fet` names the zone),
    /// and one per database (`met`: a zone was added or removed, such as a book accepted or
    /// created on another machine, or a shared book the user lost).
    static let privateDatabaseSubscription = Subscription(subscriptionID: "scorebook-private-database", kind: .database)
    static let sharedDatabaseSubscription = Subscription(subscriptionID: "scorebook-shared-database", kind: .database)

    /// `sync --watch` for every book of the file, private and accepted shared ones, over one
    /// notification channel (the file's, as for a one-book watch): a zone notification syncs
    /// the book it names (`dbs` 2: a private zone; 3: a shared zone and its owner `zoid`); a
    /// database notification reconciles that database's zones with the file's books first
    /// (new books join the watch and sync, lost ones are dropped and reported); a local edit
    /// in any book sends that book's outbox. The first sync, and the one after a failure or an
    /// outage, covers every book. Stops as a one-book watch does when the store's account,
    /// generation or sync switch changes.
    @discardableResult
    /// `onIdle` runs at each quiet poll interval (what the server does not notify, such as new
    /// invitations); `onConnectionRestored` after a sync that follows a reported problem;
    /// `onBookJoined` when a book joins the watch after it started (accepted, or made on another machine);
    /// `afterSync` after each sync the watch makes.
    public func watchBooks(until deadline: Date?, pollTimeout: Int = 30, onChange: (LocalBook, AppliedChange) -> Void,
                           onProblem: (String) -> Void = { _ in }, onConnectionRestored: () -> Void = {},
                           removedBookLines: (SyncSummary) -> [String] = ZoneSynchronizer.removedBookLines,
                           onIdle: () async -> Void = {},
                           onBookJoined: (LocalBook) -> Void = { _ in },
                           afterSync: () async -> Void = {},
                           onInitialSyncProgress: ((SyncProgress) -> Void)? = nil) async throws -> SyncStopped?
    {
        // The private database and the file-wide settings (channel, cursor) through the default book.
        let anchorManager = AccountManager(store: try store.opening(store.homeBook), makeDatabase: makeDatabase)
        let anchor = try anchorManager.makeSynchronizer(zoneID: store.homeBook.zoneID)
        let database = anchor.database
        let session = anchor.session
        var subscribed: Set<LocalBook> = []
        // The books watched since the first subscription: one subscribed later joined meanwhile.
        var watched: Set<LocalBook>?

        /// Zone subscriptions for books that have none yet (saving one again is harmless).
        func subscribeBooks() async throws {
            for known in try anchorManager.store.books() where !known.pendingDelete && !subscribed.contains(known.book) {
                let bookDatabase = known.book.scope == .shared ? database.sharedScope() : database
                if known.book.scope == .private {
                    let synchronizer = ZoneSynchronizer(store: try anchorManager.store.opening(known.book), database: database,
                                                        zoneID: known.book.zoneID, session: session)
                    try await synchronizer.ensureZone()
                }
                try await bookDatabase.saveSubscription(
                    Subscription(subscriptionID: "scorebook-\(known.book.zoneName)-changes", kind: .zone, zoneID: known.book.zoneID))
                subscribed.insert(known.book)
                if let seen = watched, !seen.contains(known.book) { onBookJoined(known.book) }
            }
            watched = (watched ?? []).union(subscribed)
        }

        return try await anchor.runWatch(
            until: deadline, pollTimeout: pollTimeout, coversEveryBook: true, onProblem: onProblem,
            onConnectionRestored: onConnectionRestored, removedBookLines: removedBookLines, onInitialSyncProgress: onInitialSyncProgress,
            subscribe: {
                try await database.saveSubscription(Self.privateDatabaseSubscription)
                try await database.sharedScope().saveSubscription(Self.sharedDatabaseSubscription)
                subscribed = []
                try await subscribeBooks()
            },
            idleCheck: {
                await onIdle()
                // The server does not notify a participant of its own removal: the shared database's
                // zones are compared with the store's shared books at every quiet poll interval.
                guard try anchorManager.store.books().contains(where: { $0.book.scope == .shared }) else { return SyncSummary() }
                return try await anchorManager.reconcileSharedZones(database: database.sharedScope(), session: session)
            },
            syncNow: { notifications, everything, progress in
                var summary = SyncSummary()
                if everything {
                    summary = try await anchorManager.syncPrivateBooks(onChange: onChange, onProgress: progress)
                    try await subscribeBooks()
                    await afterSync()
                    return summary
                }
                var due: [LocalBook] = []
                func add(_ book: LocalBook) { if !due.contains(book) { due.append(book) } }
                let before = Set(try anchorManager.store.books().map(\.book))
                let scopes = Set(notifications.filter { $0.kind == .database }.compactMap(\.databaseScope))
                if scopes.contains(2) { summary += try await anchorManager.reconcilePrivateZones(database: database, first: anchor) }
                if scopes.contains(3) {
                    summary += try await anchorManager.reconcileSharedZones(database: database.sharedScope(), session: session)
                }
                let known = try anchorManager.store.books().filter { !$0.pendingDelete }.map(\.book)
                // Books that joined (accepted or created elsewhere) sync whole, now.
                for book in known where !before.contains(book) { add(book) }
                for notification in notifications where notification.kind != .database {
                    guard let zoneName = notification.zoneName else { continue }
                    let book = notification.databaseScope == 3
                        ? LocalBook(scope: .shared, zoneName: zoneName, ownerRecordName: notification.ownerRecordName ?? "")
                        : LocalBook(zoneName: zoneName)
                    if known.contains(book) { add(book) }
                }
                for book in try anchorManager.store.booksWithSendableChanges() where known.contains(book) { add(book) }
                // A book deleted here (`book delete`) waits for the next full sync.
                if try anchorManager.store.books().contains(where: \.pendingDelete) {
                    summary += try await anchorManager.reconcilePrivateZones(database: database, first: anchor)
                }
                for book in due {
                    summary += try await anchorManager.syncBook(book, database: database, session: session, onChange: onChange,
                                                                onProgress: progress)
                }
                try await subscribeBooks()
                await afterSync()
                return summary
            })
    }
}
