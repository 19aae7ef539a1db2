import Foundation
import RecordClient
import RecordModel
import Synchronization
@testable import Scorebook
@testable import SyncEngine
import XCTest

/// The windows of issue 15 without sockets: another "process" (a second connection to the same
/// store file) logs out and in as another user while a request of the engine is in flight. The
/// answer that comes back under the old token is never written into the new user's store.
final class SyncSessionTests: XCTestCase {
    var directory: URL!
    var storePath: String { directory.appendingPathComponent("store.sqlite").path }

    override func setUp() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("scorebook-session-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A database that runs `duringRequest` once, while the first matching request is in flight.
    final class InterruptedDatabase: CloudDatabase {
        struct Plan {
            var interruptModify = false
            var interruptFetch = false
            var duringRequest: (@Sendable () async throws -> Void)?
            var modifyCalls = 0
        }

        let server: MemoryCloudDatabase
        /// What the test set up, and the modify calls seen; the engine's requests read it from their tasks.
        let plan = Mutex(Plan())

        init(_ server: MemoryCloudDatabase) { self.server = server }

        private func interrupt() async throws {
            let hook = plan.withLock { plan in
                defer { plan.duringRequest = nil }
                return plan.duringRequest
            }
            try await hook?()
        }

        func currentUserRecordName() async throws -> String { try await server.currentUserRecordName() }
        func createZone(_ zoneID: ZoneID) async throws { try await server.createZone(zoneID) }
        func modifyRecords(zoneID: ZoneID, operations: [RecordOperation], atomic: Bool) async throws -> [RecordOperationResult] {
            plan.withLock { $0.modifyCalls += 1 }
            let results = try await server.modifyRecords(zoneID: zoneID, operations: operations, atomic: atomic)
            if plan.withLock({ $0.interruptModify }) { try await interrupt() }
            return results
        }
        func lookupRecords(zoneID: ZoneID, recordNames: [String]) async throws -> [RecordOperationResult] {
            try await server.lookupRecords(zoneID: zoneID, recordNames: recordNames)
        }
        func fetchZoneChanges(zoneID: ZoneID, syncToken: String?, resultsLimit: Int?) async throws -> ZoneChangesPage {
            let page = try await server.fetchZoneChanges(zoneID: zoneID, syncToken: syncToken, resultsLimit: resultsLimit)
            if plan.withLock({ $0.interruptFetch }) { try await interrupt() }
            return page
        }
        func saveSubscription(_ subscription: Subscription) async throws { try await server.saveSubscription(subscription) }
        func createNotificationChannel() async throws -> NotificationChannel { try await server.createNotificationChannel() }
        func pollNotifications(_ channel: NotificationChannel, since cursor: String?, timeout: Int) async throws -> NotificationPage {
            try await server.pollNotifications(channel, since: cursor, timeout: timeout)
        }
    }

    let endpoint = ServerEndpoint(baseURL: URL(string: "http://127.0.0.1:1")!, container: "iCloud.scorebook",
                                  environment: "production", token: "alice-token")

    /// Alice's store with a game, logged in through `database`.
    func alicesStore(_ database: InterruptedDatabase) async throws -> (LocalRecordStore, AccountManager) {
        let store = try LocalRecordStore(path: storePath)
        let accounts = AccountManager(store: store, makeDatabase: { _ in database })
        try await accounts.login(endpoint)
        let book = Scorebook(store: store, accounts: accounts)
        try book.addGame(name: "Catan")
        return (store, accounts)
    }

    /// Another process on the same file: empties the store, logs in as bob, adds a game. It runs
    /// inside the engine's request, so it holds the path and endpoint, not the test case.
    var switchToBob: @Sendable () async throws -> Void {
        let storePath = self.storePath
        var bobsEndpoint = self.endpoint
        bobsEndpoint.token = "bob-token"
        let endpoint = bobsEndpoint
        return {
            let store = try LocalRecordStore(path: storePath)
            let bob = MemoryCloudDatabase(userRecordName: "_bob")
            let accounts = AccountManager(store: store, makeDatabase: { _ in bob })
            try accounts.logout(deleteLocalData: true)
            try await accounts.login(endpoint)
            try Scorebook(store: store, accounts: accounts).addGame(name: "Go")
        }
    }

    func gameNames(_ store: LocalRecordStore) throws -> [String] {
        try store.records(ofType: "Game").compactMap { $0.fields["name"]?.stringValue }
    }

    /// The send's answer comes back after bob took the store: it is not acknowledged into his
    /// store (no server copy of alice's game, bob's game still pending), the sync stops, and
    /// no error is recorded in bob's status.
    func testAnAnswerToASendIsNotWrittenIntoTheNextAccountsStore() async throws {
        let alice = MemoryCloudDatabase(userRecordName: "_alice")
        let database = InterruptedDatabase(alice)
        let (store, accounts) = try await alicesStore(database)
        let synchronizer = try accounts.makeSynchronizer(zoneID: Scorebook.zoneID)
        let hook = switchToBob
        database.plan.withLock { plan in
            plan.interruptModify = true
            plan.duringRequest = hook
        }
        do {
            try await synchronizer.sync()
            XCTFail("the sync goes on under alice's token")
        } catch let stopped as SyncStopped {
            XCTAssertEqual(stopped.reason, .accountChanged)
        }
        XCTAssertEqual(try gameNames(store), ["Go"])
        XCTAssertEqual(try store.pendingChangeCount(), 1, "bob's game waits for bob's sync")
        XCTAssertEqual(try store.withConnection { try $0.scalarInt("SELECT COUNT(*) FROM server_copies") }, 0)
        XCTAssertNil(try store.setting(SyncSettingKey.lastError))
        XCTAssertNil(try store.setting(SyncSettingKey.lastSync))
        XCTAssertEqual(database.plan.withLock { $0.modifyCalls }, 1, "bob's game never went out under alice's token")
        XCTAssertEqual(try accounts.account()?.userRecordName, "_bob")
    }

    /// A page of alice's change feed fetched while bob took the store is not applied.
    func testAFetchedPageIsNotAppliedToTheNextAccountsStore() async throws {
        let alice = MemoryCloudDatabase(userRecordName: "_alice")
        alice.saveAsOtherMachine(Record(recordName: "Game|~|CHESS", recordType: "Game", fields: ["name": .string("Chess")]))
        let database = InterruptedDatabase(alice)
        let (store, accounts) = try await alicesStore(database)
        try await accounts.makeSynchronizer(zoneID: Scorebook.zoneID).sync()
        XCTAssertEqual(Set(try gameNames(store)), ["Catan", "Chess"])

        alice.saveAsOtherMachine(Record(recordName: "Game|~|DOMINION", recordType: "Game", fields: ["name": .string("Dominion")]))
        let synchronizer = try accounts.makeSynchronizer(zoneID: Scorebook.zoneID)
        let hook = switchToBob
        database.plan.withLock { plan in
            plan.interruptFetch = true
            plan.duringRequest = hook
        }
        do {
            try await synchronizer.sync()
            XCTFail("the fetched page is applied")
        } catch let stopped as SyncStopped {
            XCTAssertEqual(stopped.reason, .accountChanged)
        }
        XCTAssertEqual(try gameNames(store), ["Go"])
        XCTAssertNil(try store.setting(SyncSettingKey.syncToken), "alice's change token is not bob's")
    }

    /// Logout, `sync disable`, and a logout and login as the same user each end a session; a
    /// `sync enable` that changes nothing does not.
    func testEachChangeOfAccountOrSwitchEndsTheSession() async throws {
        let database = InterruptedDatabase(MemoryCloudDatabase(userRecordName: "_alice"))
        let (_, accounts) = try await alicesStore(database)
        func reason(after change: () async throws -> Void) async throws -> SyncStopped.Reason? {
            let synchronizer = try accounts.makeSynchronizer(zoneID: Scorebook.zoneID)
            try await change()
            do {
                try synchronizer.checkSession()
                return nil
            } catch let stopped as SyncStopped {
                return stopped.reason
            }
        }
        let unchanged = try await reason { try accounts.setSyncEnabled(true) }
        XCTAssertNil(unchanged)
        let disabled = try await reason { try accounts.setSyncEnabled(false) }
        XCTAssertEqual(disabled, .syncDisabled)
        try accounts.setSyncEnabled(true)
        let offAndOn = try await reason {
            try accounts.setSyncEnabled(false)
            try accounts.setSyncEnabled(true)
        }
        XCTAssertEqual(offAndOn, .restarted)
        let outAndIn = try await reason {
            try accounts.logout(deleteLocalData: false)
            try await accounts.login(self.endpoint)
        }
        XCTAssertEqual(outAndIn, .restarted)
        let loggedOut = try await reason { try accounts.logout(deleteLocalData: false) }
        XCTAssertEqual(loggedOut, .loggedOut)
    }
}
