import RecordModel
import Synchronization

// How to port a domain onto the engine
//
// 1. Write the domain's transaction scripts once, in `StoreEngine+Domain.swift`: `async`
//    functions that run `driver.read { connection in … }`, `driver.write { … }` or, for a script
//    that may undo its writes and still answer, `driver.writeTransaction { … .rollback(answer) }`.
//    Use only `StoreConnection`: `?` placeholders, `StoreRow` accessors, `dialect` for what
//    differs (`forUpdate`, `upsert`, `isInJSONArray` with `JSONArgument.array`), `insertRows` for
//    many rows in one statement. A batch of N operations is a bounded number of statements.
// 2. A script that writes one database's rows calls `lockDatabase` first (PostgreSQL serializes a
//    database's writers on its row, so its sequences follow commit order across daemons; SQLite's
//    single writer needs nothing), `driver.announceCommit` before it returns, and `committed`
//    once the write returned.
// 3. CloudKit's rules and `ServerError` reasons live here and in `StoreRules*`, never in a driver.
// 4. Make both backends' `RecordStorage` methods forward to their `engine`, delete their own copy
//    (SQL and row decoding), and keep the behaviour's one test body in Tests/RecordStoreTests
//    (run with `SCOREBOOK_STORE_BACKEND=postgres` too).

/// The store's transaction scripts, written once over a `StoreDriver`.
package final class StoreEngine: Sendable {
    package let driver: any StoreDriver
    /// Identifies the store in sync tokens (a token from another store is rejected).
    package let storeID: String
    let clock: @Sendable () -> Int64
    /// The production environment's schema, which every production write is checked against.
    let productionSchema: Schema
    /// Told, after a commit, which databases it changed (the push hub listens here).
    private let observer = Mutex<CommitObserver?>(nil)
    private let webhookWake = Mutex<CommitObserver?>(nil)
    private let databaseIDs = Mutex<[DatabaseScope: Int64]>([:])
    /// Each database's subscriptions kept between transactions, where one process is the only
    /// writer (SQLite); nil reads them in every transaction (another daemon may change them).
    let subscriptionCache: SubscriptionCache?

    package init(driver: any StoreDriver, storeID: String, clock: @escaping @Sendable () -> Int64, productionSchema: Schema = Schema(),
                 subscriptionCache: SubscriptionCache? = nil)
    {
        self.driver = driver
        self.storeID = storeID
        self.clock = clock
        self.productionSchema = productionSchema
        self.subscriptionCache = subscriptionCache
    }

    package func setCommitObserver(_ observer: @escaping @Sendable (Set<Int64>) -> Void) {
        self.observer.withLock { $0 = CommitObserver(notify: observer) }
    }

    /// Sets what wakes the webhook delivery service after a commit that queued webhook events.
    package func setWebhookWake(_ wake: @escaping @Sendable () -> Void) {
        webhookWake.withLock { $0 = CommitObserver(notify: { _ in wake() }) }
    }

    /// Tells the observer that these databases changed (after the write returned), and the
    /// webhook delivery service that events wait (`webhookEvents`).
    package func committed(_ databaseIDs: Set<Int64>, webhookEvents: Bool = false) {
        if webhookEvents, let wake = webhookWake.withLock({ $0 }) { wake.notify([]) }
        guard !databaseIDs.isEmpty, let observer = observer.withLock({ $0 }) else { return }
        observer.notify(databaseIDs)
    }

    /// The observer in a struct, not as the mutex's value itself: a closure that is a generic
    /// container's value is rewrapped in a conversion thunk by every `inout` access, so reading
    /// it in `withLock` once a commit grew a chain of thunks that each later call walked (500
    /// deep after a minute of batch writes) and that would in the end overflow the stack.
    private struct CommitObserver: Sendable {
        let notify: @Sendable (Set<Int64>) -> Void
    }

    // MARK: Databases and zones

    /// The row id of the scope's database, creating it (with its `_defaultZone`) on first use.
    package func databaseID(_ scope: DatabaseScope) async throws -> Int64 {
        if let cached = databaseIDs.withLock({ $0[scope.databaseKey] }) { return cached }
        let arguments: [SQLValue] = [.int(scope.databaseOwnerID), .text(scope.container), .text(scope.environment.rawValue)]
        let select = "SELECT id FROM databases WHERE user_id = ? AND container = ? AND environment = ?"
        var id = try await driver.read { try await $0.scalarInt(select, arguments) }
        if id == nil {
            id = try await driver.write { connection -> Int64 in
                let inserted = try await connection.scalarInt(
                    """
                    INSERT INTO databases (user_id, container, environment) VALUES (?, ?, ?)
                    ON CONFLICT (user_id, container, environment) DO NOTHING RETURNING id
                    """, arguments)
                if let inserted {
                    let zone = try await connection.scalarInt("INSERT INTO zones (database_id, name) VALUES (?, ?) RETURNING id",
                                                              [.int(inserted), .text(ZoneID.defaultZoneName)]) ?? 0
                    try await self.startWebhookStreams(zoneRowID: zone, connection)
                    return inserted
                }
                // Another transaction created it first (and committed: the conflict waited for it).
                guard let existing = try await connection.scalarInt(select, arguments) else {
                    throw ServerError(.internalError, "database row vanished")
                }
                return existing
            }
        }
        let found = id!
        databaseIDs.withLock { $0[scope.databaseKey] = found }
        return found
    }

    /// Locks the database's row for the rest of the transaction (see the note at the top).
    func lockDatabase(_ databaseID: Int64, _ connection: any StoreConnection) async throws {
        guard !connection.dialect.forUpdate.isEmpty else { return }
        try await connection.execute("SELECT 1 FROM databases WHERE id = ?" + connection.dialect.forUpdate, [.int(databaseID)])
    }

    func liveZone(_ databaseID: Int64, name: String, forUpdate: Bool = false, _ connection: any StoreConnection) async throws -> ZoneRow? {
        let lock = forUpdate ? connection.dialect.forUpdate : ""
        return try await connection.first("SELECT id, name, seq, purged_seq FROM zones WHERE database_id = ? AND name = ? AND deleted = 0" + lock,
                                          [.int(databaseID), .text(name)]).map(ZoneRow.init)
    }

    func requireZone(_ databaseID: Int64, _ zone: ZoneID, forUpdate: Bool = false, _ connection: any StoreConnection) async throws -> ZoneRow {
        guard let row = try await liveZone(databaseID, name: zone.zoneName, forUpdate: forUpdate, connection) else {
            throw ZoneRules.notFound(zone)
        }
        return row
    }

    func zoneID(_ name: String, _ scope: DatabaseScope) -> ZoneID { ZoneID(zoneName: name, ownerRecordName: scope.zoneOwnerRecordName) }

    func zoneInfo(_ zone: ZoneRow, _ scope: DatabaseScope) -> ZoneInfo {
        ZoneInfo(zoneID: zoneID(zone.name, scope), syncToken: FeedRules.zoneToken(storeID: storeID, zone: zone))
    }

    /// Advances the database's zone-list sequence and returns it.
    func bumpDatabaseSequence(_ databaseID: Int64, _ connection: any StoreConnection) async throws -> Int64 {
        try await connection.scalarInt("UPDATE databases SET db_seq = db_seq + 1 WHERE id = ? RETURNING db_seq", [.int(databaseID)]) ?? 0
    }
}

extension ZoneRow {
    /// Columns `id, name, seq, purged_seq` of a `zones` row.
    init(_ row: StoreRow) { self.init(id: row.int(0), name: row.text(1), seq: row.int(2), purgedSeq: row.int(3)) }
}
