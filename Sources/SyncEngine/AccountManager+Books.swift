import Foundation
import RecordModel

extension SyncSummary {
    /// Adds another book's sync to this one.
    public static func += (left: inout SyncSummary, right: SyncSummary) {
        left.sentSaved += right.sentSaved
        left.sentDeleted += right.sentDeleted
        left.receivedSaved += right.receivedSaved
        left.receivedDeleted += right.receivedDeleted
        left.conflicts += right.conflicts
        left.conflictDetails += right.conflictDetails
        left.dropped += right.dropped
        left.booksRemoved += right.booksRemoved
        left.sharedBooksLost.merge(right.sharedBooksLost) { $1 }
        left.picturesUploaded += right.picturesUploaded
        left.picturesDownloaded += right.picturesDownloaded
    }
}

extension AccountManager {
    /// Syncs every private book (zone) of the account into this file: books deleted here are
    /// deleted on the server, zones made on another machine become books here, zones another
    /// machine deleted are dropped here (their unsent edits counted as dropped), and every
    /// other book syncs as one zone; then the shared books likewise. `onChange` hears each
    /// applied change with its book.
    public func syncPrivateBooks(onChange: (LocalBook, AppliedChange) -> Void = { _, _ in },
                                 onProgress: ((SyncProgress) -> Void)? = nil) async throws -> SyncSummary
    {
        // Checks the account and the switch before anything reaches the server; through the
        // default book, whose database is the private one whatever book this store was opened on.
        let first = try AccountManager(store: try store.opening(store.homeBook), makeDatabase: makeDatabase)
            .makeSynchronizer(zoneID: store.homeBook.zoneID)
        let database = first.database
        var summary = try await reconcilePrivateZones(database: database, first: first)
        for known in try store.books() where known.book.scope == .private && !known.pendingDelete {
            summary += try await syncBook(known.book, database: database, session: first.session, onChange: onChange, onProgress: onProgress)
        }
        summary += try await syncSharedBooks(database: database.sharedScope(), session: first.session,
                                             onChange: onChange, onProgress: onProgress)
        return summary
    }

    /// One book's sync cycle, through the database that holds it (`database` is the private one).
    func syncBook(_ book: LocalBook, database: any CloudDatabase, session: SyncSession?, onChange: (LocalBook, AppliedChange) -> Void,
                  onProgress: ((SyncProgress) -> Void)?) async throws -> SyncSummary
    {
        let bookStore = try store.opening(book)
        let bookDatabase = book.scope == .shared ? database.sharedScope() : database
        // Zones of the shared database are never created by a participant.
        if book.scope == .shared { try bookStore.setSetting(SyncSettingKey.zoneReady, "1") }
        let synchronizer = ZoneSynchronizer(store: bookStore, database: bookDatabase, zoneID: book.zoneID, session: session)
        return try await synchronizer.sync(onChange: { onChange(book, $0) }, onProgress: onProgress)
    }

    /// The private database's zones against the file's private books: books deleted here are
    /// deleted on the server, books whose zones another machine deleted are dropped (reported
    /// in the summary), and zones made on another machine become books here.
    func reconcilePrivateZones(database: any CloudDatabase, first: ZoneSynchronizer) async throws -> SyncSummary {
        var summary = SyncSummary()
        var serverZones: Set<String>
        do {
            serverZones = Set(try await first.retryPolicy.waitingOutBusyServer(sleep: first.sleep) { try await database.listZones() }.map(\.zoneName))
        } catch {
            // Recorded as a failed sync of this book would be, for `status`.
            let failure = ZoneSynchronizer.syncError(error)
            // On this manager's book (the one `status` is asked about), checked against the session.
            let here = ZoneSynchronizer(store: store, database: database, zoneID: store.book.zoneID, session: first.session)
            try? here.guarded { try store.setSetting(SyncSettingKey.lastError, failure.description) }
            throw failure
        }
        try first.checkSession()
        for known in try store.books() where known.book.scope == .private {
            let bookStore = try store.opening(known.book)
            if known.pendingDelete {
                do {
                    if serverZones.contains(known.book.zoneName) { try await database.deleteZone(known.book.zoneID) }
                } catch {
                    throw ZoneSynchronizer.syncError(error)
                }
                try bookStore.forgetBook()
                serverZones.remove(known.book.zoneName)
                continue
            }
            // A zone this file synced before that the server no longer has was deleted on
            // another machine (the default book is created again instead, as it always was).
            if known.book != store.homeBook, !serverZones.contains(known.book.zoneName),
               try bookStore.setting(SyncSettingKey.zoneReady) != nil
            {
                let pending = try bookStore.sendableChanges().filter { $0.operation == .save }
                summary.dropped += pending.map { DroppedChange(recordName: $0.recordName, recordType: $0.recordType, reason: .deleted) }
                summary.booksRemoved.append(known.book.zoneName)
                try bookStore.forgetBook()
            }
        }
        // Zones another machine made: books here too.
        for zoneName in serverZones.sorted() where !zoneName.hasPrefix("_") {
            _ = try store.opening(LocalBook(zoneName: zoneName))
        }
        return summary
    }

    /// The shared database's zones against the file's shared books: a book whose zone the
    /// shared database no longer lists (the user was removed, left, or the owner unshared or
    /// deleted it) is dropped here and reported, with its unsent edits as dropped; a zone it
    /// lists that the file does not know (accepted on another machine) becomes a book here.
    func reconcileSharedZones(database: any CloudDatabase, session: SyncSession?) async throws -> SyncSummary {
        var summary = SyncSummary()
        let visible: Set<LocalBook>
        do {
            visible = Set(try await RetryPolicy().waitingOutBusyServer(sleep: { try await Task.sleep(for: .seconds($0)) }) {
                try await database.listZones()
            }.map {
                LocalBook(scope: .shared, zoneName: $0.zoneName, ownerRecordName: $0.ownerRecordName ?? "")
            })
        } catch {
            throw ZoneSynchronizer.syncError(error)
        }
        if let session { try store.withConnection { try session.verify(in: $0) } }
        for known in try store.books() where known.book.scope == .shared && !visible.contains(known.book) {
            let bookStore = try store.opening(known.book)
            let pending = try bookStore.sendableChanges().filter { $0.operation == .save }
            summary.dropped += pending.map { DroppedChange(recordName: $0.recordName, recordType: $0.recordType, reason: .deleted) }
            summary.booksRemoved.append(known.title ?? known.book.zoneName)
            summary.sharedBooksLost[known.title ?? known.book.zoneName] = known.book.ownerRecordName
            try bookStore.forgetBook()
        }
        let known = Set(try store.books().map(\.book))
        for book in visible.sorted(by: { ($0.ownerRecordName, $0.zoneName) < ($1.ownerRecordName, $1.zoneName) })
        where !book.ownerRecordName.isEmpty {
            let bookStore = try store.opening(book)
            // A book accepted on another machine: its title and the user's permission come from
            // the share, so a read-only book refuses edits here too before any is queued.
            if !known.contains(book), let participation = try? await database.shareParticipation(zoneID: book.zoneID) {
                try bookStore.setBookDetails(title: participation.title, role: participation.readOnly ? "read-only" : "read-write")
            }
        }
        return summary
    }

    /// Syncs the accepted shared books (through `/shared/`), after reconciling them with the
    /// zones the shared database lists.
    func syncSharedBooks(database: any CloudDatabase, session: SyncSession?, onChange: (LocalBook, AppliedChange) -> Void,
                         onProgress: ((SyncProgress) -> Void)?) async throws -> SyncSummary
    {
        var summary = try await reconcileSharedZones(database: database, session: session)
        for known in try store.books() where known.book.scope == .shared {
            let bookStore = try store.opening(known.book)
            // The owner may have renamed the book or changed the user's permission since.
            if let participation = try? await database.shareParticipation(zoneID: known.book.zoneID),
               participation.title != nil && participation.title != known.title
                || (participation.readOnly ? "read-only" : "read-write") != known.role
            {
                try bookStore.setBookDetails(title: participation.title ?? known.title,
                                             role: participation.readOnly ? "read-only" : "read-write")
            }
            // Zones of the shared database are never created by a participant.
            try bookStore.setSetting(SyncSettingKey.zoneReady, "1")
            let synchronizer = ZoneSynchronizer(store: bookStore, database: database, zoneID: known.book.zoneID, session: session)
            summary += try await synchronizer.sync(onChange: { onChange(known.book, $0) }, onProgress: onProgress)
        }
        return summary
    }
}
