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
        left.dropped += right.dropped
        left.booksRemoved += right.booksRemoved
    }
}

extension AccountManager {
    /// Syncs every private book (zone) of the account into this file: books deleted here are
    /// deleted on the server, zones made on another machine become books here, zones another
    /// machine deleted are dropped here (their unsent edits counted as dropped), and every
    /// other book syncs as one zone. `onChange` hears each applied change with its book.
    public func syncPrivateBooks(onChange: (LocalBook, AppliedChange) -> Void = { _, _ in },
                                 onProgress: ((SyncProgress) -> Void)? = nil) async throws -> SyncSummary
    {
        // Checks the account and the switch before anything reaches the server.
        let first = try makeSynchronizer(zoneID: store.book.zoneID)
        let database = first.database
        var summary = SyncSummary()
        var serverZones: Set<String>
        do {
            serverZones = Set(try await database.listZones().map(\.zoneName))
        } catch {
            // Recorded as a failed sync of this book would be, for `status`.
            let failure = ZoneSynchronizer.syncError(error)
            try? first.guarded { try store.setSetting(SyncSettingKey.lastError, failure.description) }
            throw failure
        }
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
            if known.book != .defaultBook, !serverZones.contains(known.book.zoneName),
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
        for known in try store.books() where known.book.scope == .private && !known.pendingDelete {
            let bookStore = try store.opening(known.book)
            let synchronizer = ZoneSynchronizer(store: bookStore, database: database, zoneID: known.book.zoneID,
                                                session: first.session)
            summary += try await synchronizer.sync(onChange: { onChange(known.book, $0) }, onProgress: onProgress)
        }
        summary += try await syncSharedBooks(database: database.sharedScope(), session: first.session,
                                             onChange: onChange, onProgress: onProgress)
        return summary
    }

    /// Syncs the accepted shared books (through `/shared/`). A book whose zone the shared
    /// database no longer lists (the user was removed, left, or the owner unshared or deleted
    /// it) is dropped here and reported, with its unsent edits as dropped.
    func syncSharedBooks(database: any CloudDatabase, session: SyncSession?, onChange: (LocalBook, AppliedChange) -> Void,
                         onProgress: ((SyncProgress) -> Void)?) async throws -> SyncSummary
    {
        var summary = SyncSummary()
        let shared = try store.books().filter { $0.book.scope == .shared }
        guard !shared.isEmpty else { return summary }
        let visible: Set<LocalBook>
        do {
            visible = Set(try await database.listZones().map {
                LocalBook(scope: .shared, zoneName: $0.zoneName, ownerRecordName: $0.ownerRecordName ?? "")
            })
        } catch {
            throw ZoneSynchronizer.syncError(error)
        }
        for known in shared {
            let bookStore = try store.opening(known.book)
            guard visible.contains(known.book) else {
                let pending = try bookStore.sendableChanges().filter { $0.operation == .save }
                summary.dropped += pending.map { DroppedChange(recordName: $0.recordName, recordType: $0.recordType, reason: .deleted) }
                summary.booksRemoved.append(known.title ?? known.book.zoneName)
                try bookStore.forgetBook()
                continue
            }
            // Zones of the shared database are never created by a participant.
            try bookStore.setSetting(SyncSettingKey.zoneReady, "1")
            let synchronizer = ZoneSynchronizer(store: bookStore, database: database, zoneID: known.book.zoneID, session: session)
            summary += try await synchronizer.sync(onChange: { onChange(known.book, $0) }, onProgress: onProgress)
        }
        return summary
    }
}
