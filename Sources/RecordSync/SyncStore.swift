import Foundation

/// One machine's copy of an app's entities, synced through scorebookd: the typed face of the
/// layer. Edits are durable before the call returns and sync later; `sync()` sends and fetches,
/// `watch()` keeps doing so as the server pushes; `events()` tells what arrived.
///
/// ```swift
/// let store = try SyncStore(path: "notes.sqlite", zone: "Notes", entityTypes: [Folder.self, Note.self])
/// try await store.logIn(server: URL(string: "http://127.0.0.1:8080")!, token: token)
/// let inbox = Folder(name: "Inbox")
/// try store.save(inbox)
/// try store.save(Note(folder: inbox.recordName, text: "Buy milk"))
/// try await store.sync()
/// let notes = try store.all(Note.self)
/// ```
///
/// A store object reads and edits one zone (`zone`); `sync()` and `watch()` cover every zone of
/// the file, the account's own and the shared ones it accepted. Several store objects, and
/// several processes, may open the same file.
public final class SyncStore: Sendable {
    /// The store file.
    public let path: String
    /// The zone this object reads and edits.
    public let zone: String
    /// The owner of `zone` when it is shared with the account (nil: the account's own zone).
    public let zoneOwner: String?
    /// The types records are read as; records of other types are kept and synced untouched.
    public let entityTypes: [any SyncedEntity.Type]
    let store: LocalRecordStore
    let accounts: AccountManager
    let transport: any HTTPTransport
    let hub: EventHub

    /// Opens (creating if needed) the store file at `path` on `zone`, the app's home zone.
    ///
    /// - Parameters:
    ///   - path: the store file (its folder is made if needed; assets go in a folder beside it).
    ///   - zone: the app's home zone on the account, made on the server at the first sync.
    ///   - entityTypes: the app's entity types, for typed events and reads.
    ///   - transport: how requests reach the server (`SocketTransport`, plain sockets and
    ///     libcurl for HTTPS, by default); an app on another platform brings its own.
    ///   - merge: how a record edited here and on another machine is merged; the default is the
    ///     three-way field merge of `RecordMerge.merge` (the conflict rules).
    public convenience init(path: String, zone: String, entityTypes: [any SyncedEntity.Type],
                            transport: any HTTPTransport = SocketTransport(),
                            merge: @escaping RecordMerge.Handler = RecordMerge.merge) throws(RecordSyncError)
    {
        let home = LocalBook(zoneName: zone)
        let store = try typed { try LocalRecordStore(path: path, book: home, homeBook: home, fieldMerge: merge) }
        self.init(store: store, entityTypes: entityTypes, transport: transport, hub: EventHub())
    }

    init(store: LocalRecordStore, entityTypes: [any SyncedEntity.Type], transport: any HTTPTransport, hub: EventHub) {
        self.store = store
        path = store.path
        zone = store.book.zoneName
        zoneOwner = store.book.scope == .shared ? store.book.ownerRecordName : nil
        self.entityTypes = entityTypes
        self.transport = transport
        self.hub = hub
        accounts = AccountManager(store: store, makeDatabase: { [transport] in RecordClient(endpoint: $0, transport: transport) })
    }

    /// The same file on another zone (`owner`: the owner's user record name, for a zone shared
    /// with the account), with the same listeners. An own zone not yet known is made here and
    /// on the server at the next sync.
    public func opening(zone: String, owner: String? = nil) throws(RecordSyncError) -> SyncStore {
        let book = owner.map { LocalBook(scope: .shared, zoneName: zone, ownerRecordName: $0) } ?? LocalBook(zoneName: zone)
        let other = try typed { try store.opening(book) }
        return SyncStore(store: other, entityTypes: entityTypes, transport: transport, hub: hub)
    }

    /// The entity type the store was given for a record type.
    public func entityType(named recordType: String) -> (any SyncedEntity.Type)? {
        entityTypes.first { $0.recordType == recordType }
    }

    // MARK: Events

    /// A new stream of what happens to the store (every store object of the same file opened
    /// through `opening(zone:owner:)` reports to it). It ends when its consumer stops iterating.
    public func events() -> AsyncStream<SyncEvent> { hub.stream() }

    // MARK: Account

    /// Checks the token with the server and makes it the store's account. Refused when the
    /// store holds another user's data.
    ///
    /// The `development` environment learns an app's record types and fields on first save;
    /// `production` accepts only those of the daemon's schema (`scorebookd serve --schema`).
    @discardableResult
    public func logIn(server: URL, token: String, container: String = "iCloud.recordsync",
                      environment: String = "development") async throws(RecordSyncError) -> SyncAccount
    {
        let account = try await typed {
            try await accounts.login(serverURL: server, container: container, environment: environment, token: token)
        }
        hub.send(.accountChanged(account))
        return account
    }

    /// Forgets the credentials; the data stays unless `deleteLocalData`.
    public func logOut(deleteLocalData: Bool = false) throws(RecordSyncError) {
        try typed { try accounts.logout(deleteLocalData: deleteLocalData) }
        hub.send(.accountChanged(nil))
    }

    /// The store's account, if logged in.
    public func account() throws(RecordSyncError) -> SyncAccount? {
        try typed { try accounts.account() }
    }

    // MARK: Offline edits

    /// Saves entities in one transaction with their outbox entries: on disk before it returns,
    /// sent by the next sync.
    public func save(_ entities: [any SyncedEntity]) throws(RecordSyncError) {
        try typed {
            try store.edit { editor in
                for entity in entities { try editor.save(entity.localRecord) }
            }
        }
    }

    public func save(_ entity: some SyncedEntity) throws(RecordSyncError) {
        try save([entity])
    }

    /// Deletes a record and every record tied to it by `DELETE_SELF` references, here now and
    /// on the server at the next sync. Returns the names of the records deleted.
    @discardableResult
    public func delete(recordNamed recordName: String) throws(RecordSyncError) -> [String] {
        try typed { try store.edit { try $0.delete(recordNamed: recordName) }.map(\.recordName) }
    }

    @discardableResult
    public func delete(_ entity: some SyncedEntity) throws(RecordSyncError) -> [String] {
        try delete(recordNamed: entity.recordName)
    }

    // MARK: Reads

    /// Every entity of a type in the zone; records that cannot be read as one are skipped.
    public func all<E: SyncedEntity>(_ type: E.Type) throws(RecordSyncError) -> [E] {
        try typed { try store.records(ofType: E.recordType).compactMap { try? E(record: $0) } }
    }

    /// The entity of a type with a record name, if the zone holds it.
    public func entity<E: SyncedEntity>(_ type: E.Type, named recordName: String) throws(RecordSyncError) -> E? {
        try typed { try store.record(named: recordName).flatMap { try? E(record: $0) } }
    }

    /// Entities of a type whose references point at `recordName` (a folder's notes).
    public func entities<E: SyncedEntity>(_ type: E.Type, referencing recordName: String) throws(RecordSyncError) -> [E] {
        try typed { try store.records(referencing: recordName, ofType: E.recordType).compactMap { try? E(record: $0) } }
    }

    /// The local record of any type with a name (fields a newer version wrote included).
    public func record(named recordName: String) throws(RecordSyncError) -> Record? {
        try typed { try store.record(named: recordName) }
    }

    /// Edits of this zone not yet acknowledged by the server.
    public func pendingChangeCount() throws(RecordSyncError) -> Int {
        try typed { try store.pendingChangeCount() }
    }

    /// Edits of this zone the server refused for good (a record type the server's schema does
    /// not have, say), by record name with the server's reason; they stay here, unsent.
    public func refusedChanges() throws(RecordSyncError) -> [String: String] {
        try typed { try store.parkedChanges() }
    }

    // MARK: Assets

    /// Copies a file into the store's asset folder and returns the `ASSET` field value to save
    /// in an entity; the next sync uploads the bytes.
    public func addAsset(fileAt path: String) throws(RecordSyncError) -> FieldValue {
        try typed { try PictureFiles(storePath: store.path).add(fileAt: path).fieldValue }
    }

    /// The local file of an asset field value: nil until a sync has downloaded it.
    public func assetFile(_ value: FieldValue?) -> String? {
        guard let asset = PictureReference(value) else { return nil }
        let files = PictureFiles(storePath: store.path)
        return files.has(asset) ? files.path(of: asset.checksum) : nil
    }

    // MARK: Sync

    /// One full cycle for every zone of the file: sends local edits, fetches other machines'
    /// (merging edits made on both sides), downloads assets. Reports each change applied, each
    /// conflict settled, progress and state as events; honours cancellation between requests.
    @discardableResult
    public func sync() async throws(RecordSyncError) -> SyncSummary {
        try typed { try Task.checkCancellation() }
        guard try account() != nil else { throw RecordSyncError(.notLoggedIn, "not logged in; call logIn(server:token:) first") }
        hub.send(.stateChanged(.syncing))
        do {
            let summary = try await accounts.syncPrivateBooks(onChange: report, onProgress: { [hub] in hub.send(.progress($0)) })
            reportOutcome(summary)
            hub.send(.stateChanged(.idle))
            return summary
        } catch {
            let failure = RecordSyncError(error)
            hub.send(.stateChanged(.failed(failure)))
            throw failure
        }
    }

    /// Syncs, then applies other machines' changes as the server pushes them and sends edits
    /// made meanwhile (by this process or another on the same file), until `deadline` or until
    /// the task is cancelled. Returns normally then; throws when the store's account changed
    /// or sync was turned off by another process (`.stopped`).
    public func watch(until deadline: Date? = nil) async throws(RecordSyncError) {
        guard try account() != nil else { throw RecordSyncError(.notLoggedIn, "not logged in; call logIn(server:token:) first") }
        hub.send(.stateChanged(.watching))
        defer { hub.send(.stateChanged(.idle)) }
        let stopped: SyncStopped?
        do {
            stopped = try await accounts.watchBooks(
                until: deadline, onChange: report, onProblem: { [hub] in hub.send(.problem($0)) },
                removedBookLines: { [self] summary in
                    reportOutcome(summary)
                    return []
                },
                onInitialSyncProgress: { [hub] in hub.send(.progress($0)) })
        } catch is CancellationError {
            return
        } catch {
            throw RecordSyncError(error)
        }
        if let stopped { throw RecordSyncError(.stopped, stopped.description) }
    }

    /// A change the engine applied, as an event.
    private func report(_ book: LocalBook, _ change: AppliedChange) {
        guard hub.hasListeners else { return }
        switch change.kind {
        case .saved:
            guard let record = change.record else { return }
            let entity = entityType(named: record.recordType).flatMap { try? $0.init(record: record) }
            hub.send(.changed(ChangedEntity(zone: book.zoneName, record: record, entity: entity)))
        case .deleted:
            let type = change.recordType.isEmpty ? (RecordNaming.recordType(fromRecordName: change.recordName) ?? "") : change.recordType
            hub.send(.deleted(DeletedEntity(zone: book.zoneName, recordName: change.recordName, recordType: type,
                                            entityType: entityType(named: type), deletedBy: change.deletedBy)))
        }
    }

    /// Conflicts a sync settled and edits it dropped, as events.
    private func reportOutcome(_ summary: SyncSummary) {
        for conflict in summary.conflictDetails { hub.send(.conflictResolved(conflict)) }
        for dropped in summary.dropped { hub.send(.dropped(dropped)) }
    }
}
