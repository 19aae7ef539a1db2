import Foundation
import RecordClient
import RecordModel
@testable import Scorebook
import Synchronization
import SyncEngine
import XCTest

/// A clock tests move by hand, so that which edit is newer is decided by the test.
final class TestClock: Sendable {
    private let reading: Mutex<Date>

    init(_ seconds: Double = 1_800_000_000) { reading = Mutex(Date(timeIntervalSince1970: seconds)) }

    var now: Date {
        get { reading.withLock { $0 } }
        set { reading.withLock { $0 = newValue } }
    }

    func advance(_ seconds: Double = 1) { reading.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// A server double that can be made unreachable, or lose the answer to a modify after applying it.
final class FlakyDatabase: CloudDatabase {
    private struct Faults {
        var isDown = false
        var loseNextModifyAnswer = false
        var heldPictures: Set<String> = []
        var uploads: [String] = []
    }

    let server: MemoryCloudDatabase
    private let faults = Mutex(Faults())

    var isDown: Bool {
        get { faults.withLock { $0.isDown } }
        set { faults.withLock { $0.isDown = newValue } }
    }
    var loseNextModifyAnswer: Bool {
        get { faults.withLock { $0.loseNextModifyAnswer } }
        set { faults.withLock { $0.loseNextModifyAnswer = newValue } }
    }

    init(_ server: MemoryCloudDatabase) { self.server = server }

    func check() throws { if isDown { throw RecordClientError.unreachable("cannot reach the server at test") } }

    func currentUserRecordName() async throws -> String { try check(); return try await server.currentUserRecordName() }
    func createZone(_ zoneID: ZoneID) async throws { try check(); try await server.createZone(zoneID) }
    /// Pictures (by `fileChecksum`) the server holds, as the assets API says: an upload adds its bytes, a
    /// save without a receipt is refused (BAD_REQUEST) unless the server holds them.
    var heldPictures: Set<String> {
        get { faults.withLock { $0.heldPictures } }
        set { faults.withLock { $0.heldPictures = newValue } }
    }
    var uploads: [String] { faults.withLock { $0.uploads } }

    func uploadAsset(zoneID: ZoneID, recordName: String, recordType: String, fieldName: String, file path: String,
                     size: Int64, progress: (@Sendable (Int64) -> Void)?) async throws -> JSONValue
    {
        try check()
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: path))
        let checksum = Data(SHA256Hasher.digest(bytes)).base64EncodedString()
        let uploadCount = faults.withLock {
            $0.uploads.append(checksum)
            $0.heldPictures.insert(checksum)
            return $0.uploads.count
        }
        return ["fileChecksum": .string(checksum), "size": .int(Int64(bytes.count)), "receipt": .string("receipt-\(uploadCount)")]
    }

    func modifyRecords(zoneID: ZoneID, operations: [RecordOperation], atomic: Bool) async throws -> [RecordOperationResult] {
        try check()
        var operations = operations
        var refused: [Int: ServerError] = [:]
        for index in operations.indices where !operations[index].kind.isDelete {
            for (field, value) in operations[index].record.fields where value.type == .asset {
                guard let checksum = value.value["fileChecksum"]?.stringValue else { continue }
                if value.value["receipt"] == nil, !heldPictures.contains(checksum) {
                    refused[index] = ServerError(.badRequest, "no asset \(checksum) to attach without a receipt")
                }
                operations[index].record.fields[field] = .asset(["fileChecksum": .string(checksum), "size": value.value["size"] ?? .int(0)])
            }
        }
        guard refused.isEmpty else {
            // Only the refused operations fail; the rest go through as the server would apply them.
            let passing = operations.indices.filter { refused[$0] == nil }
            var answers = try await server.modifyRecords(zoneID: zoneID, operations: passing.map { operations[$0] }, atomic: atomic)[...]
            return operations.indices.map { index in
                if let error = refused[index] { return .failed(error) }
                return answers.popFirst()!
            }
        }
        let results = try await server.modifyRecords(zoneID: zoneID, operations: operations, atomic: atomic)
        if faults.withLock({ faults in defer { faults.loseNextModifyAnswer = false }; return faults.loseNextModifyAnswer }) {
            throw RecordClientError.unreachable("connection lost before the answer")
        }
        return results
    }
    func lookupRecords(zoneID: ZoneID, recordNames: [String]) async throws -> [RecordOperationResult] {
        try check(); return try await server.lookupRecords(zoneID: zoneID, recordNames: recordNames)
    }
    func fetchZoneChanges(zoneID: ZoneID, syncToken: String?, resultsLimit: Int?) async throws -> ZoneChangesPage {
        try check(); return try await server.fetchZoneChanges(zoneID: zoneID, syncToken: syncToken, resultsLimit: resultsLimit)
    }
    func saveSubscription(_ subscription: Subscription) async throws { try check() }
    func createNotificationChannel() async throws -> NotificationChannel { try check(); return try await server.createNotificationChannel() }
    func pollNotifications(_ channel: NotificationChannel, since cursor: String?, timeout: Int) async throws -> NotificationPage {
        try check(); return try await server.pollNotifications(channel, since: cursor, timeout: timeout)
    }
}

/// One machine: a scorebook in a temporary store, synced with a server double.
final class TestMachine {
    let book: Scorebook
    let clock: TestClock
    let database: FlakyDatabase
    let directory: URL
    var sleeps: [Double] = []

    init(server: MemoryCloudDatabase, clock: TestClock) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("scorebook-tests-\(UUID().uuidString)")
        self.clock = clock
        database = FlakyDatabase(server)
        let store = try LocalRecordStore(path: directory.appendingPathComponent("store.sqlite").path)
        let database = self.database
        let accounts = AccountManager(store: store, makeDatabase: { _ in database })
        book = Scorebook(store: store, accounts: accounts, clock: { clock.now })
        try accounts.setSyncEnabled(true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    var synchronizer: ZoneSynchronizer {
        ZoneSynchronizer(store: book.store, database: database, zoneID: Scorebook.zoneID,
                         retryPolicy: RetryPolicy(maximumAttempts: 3, baseDelay: 0.01, maximumDelay: 0.05),
                         sleep: { _ in })
    }

    @discardableResult
    func sync(file: StaticString = #filePath, line: UInt = #line) async throws -> SyncSummary {
        var changes: [AppliedChange] = []
        let summary = try await synchronizer.sync { changes.append($0) }
        applied += changes
        return summary
    }

    var applied: [AppliedChange] = []

    /// Every local record, by name, without server bookkeeping: what a user can see.
    func snapshot() throws -> [String: [String: FieldValue]] {
        var result: [String: [String: FieldValue]] = [:]
        for type in Scorebook.entityTypes {
            for record in try book.store.records(ofType: type.recordType) { result[record.recordName] = record.fields }
        }
        return result
    }
}

/// The server's records in the same shape as `TestMachine.snapshot()`.
func snapshot(of server: MemoryCloudDatabase) -> [String: [String: FieldValue]] {
    server.allRecords.mapValues(\.fields)
}

/// Names of records whose DELETE_SELF or VALIDATE references point at nothing.
func orphans(in records: [String: [String: FieldValue]]) -> [String] {
    records.compactMap { name, fields in
        fields.values.flatMap(\.references).contains { $0.action != .none && records[$0.recordName] == nil } ? name : nil
    }.sorted()
}
