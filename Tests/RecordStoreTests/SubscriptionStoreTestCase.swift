import Foundation
import RecordModel
import RecordStore
import SQLiteRecordStore
import TestSupport
import XCTest

/// Base class of the store-level subscription tests: a fresh `SQLiteRecordStore`
/// in a temporary directory, one user, and helpers that read the notification outbox the way the
/// push hub does (`notifications(databaseID:after:limit:)`), from a cursor the test advances.
///
/// Everything here is self-contained (no shared helpers of other files) so the file compiles on
/// its own; every helper name is prefixed or scoped to this class.
class SubscriptionStoreTestCase: XCTestCase {
    static let container = "iCloud.scorebook.subscriptions"

    var directory: URL!
    var store: BlockingStore!
    /// The backend this run tests (`StoreBackend.selected`).
    class var backend: StoreBackend { StoreBackend.selected }
    /// This test's PostgreSQL database (PostgreSQL backend only).
    var postgresURL: String?
    var user: User!
    /// The user's private database in `development` (types and fields accepted just in time).
    var dev: DatabaseScope!
    /// The outbox's database id for `dev` and where the test has read up to.
    var databaseID: Int64 = 0
    var cursor: Int64 = 0
    /// A deterministic clock (ms), ticking 1 ms per read; `advanceClock` jumps ahead.
    let clock = TestClock()

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("subscription-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if Self.backend == .postgres {
            if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
            postgresURL = try PostgresTestCluster.shared().createDatabase()
        }
        store = try reopenedStore()
        user = try store.createUser(name: "alice").user
        dev = DatabaseScope(user: user, container: Self.container, environment: .development)
        let channel = try store.createPushToken(dev, apnsEnvironment: "development")
        databaseID = channel.databaseID
        cursor = channel.startCursor
    }

    /// A store of this class's backend on this test's data directory or database.
    func reopenedStore() throws -> BlockingStore {
        BlockingStore(try Self.backend.open(directory: directory, postgresURL: postgresURL, clock: clock))
    }

    override func tearDownWithError() throws {
        store?.close()
        store = nil
        if let postgresURL, let name = postgresURL.split(separator: "/").last {
            try? PostgresTestCluster.shared().psql("DROP DATABASE IF EXISTS \(name)")
        }
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    // MARK: Names and records

    /// A Scorebook-style record name: `Type|~|UUID`.
    func newName(_ type: String) -> String { "\(type)|~|\(UUID().uuidString)" }

    func wireRecord(_ name: String, _ type: String, _ fields: [String: JSONValue] = [:], tag: String? = nil) -> JSONValue {
        var members: [String: JSONValue] = ["recordName": .string(name), "recordType": .string(type), "fields": .object(fields)]
        if let tag { members["recordChangeTag"] = .string(tag) }
        return .object(members)
    }

    func stringField(_ value: String) -> JSONValue { ["value": .string(value), "type": "STRING"] }
    func intField(_ value: Int64) -> JSONValue { ["value": .int(value), "type": "INT64"] }
    func doubleField(_ value: Double) -> JSONValue { ["value": .double(value), "type": "DOUBLE"] }
    func deleteSelfReference(_ target: String) -> JSONValue {
        ["value": ["recordName": .string(target), "action": "DELETE_SELF"], "type": "REFERENCE"]
    }

    @discardableResult
    func modify(_ zone: String = ZoneID.defaultZoneName, atomic: Bool = true, scope: DatabaseScope? = nil,
                _ operations: [(RecordOperationType, JSONValue)]) throws -> [RecordOperationResult]
    {
        try store.modifyRecords(scope ?? dev, zone: ZoneID(zoneName: zone),
                                operations: operations.map { RecordOperation(type: $0.0, record: $0.1) },
                                atomic: atomic, deviceID: "subscription-tests")
    }

    /// Creates one record and returns its change tag; a refusal fails the test by throwing.
    @discardableResult
    func create(_ zone: String = ZoneID.defaultZoneName, _ name: String, _ type: String, _ fields: [String: JSONValue] = [:],
                scope: DatabaseScope? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> String
    {
        try savedTag(try modify(zone, scope: scope, [(.create, wireRecord(name, type, fields))]).first, file: file, line: line)
    }

    /// Updates the given fields of a record (forceUpdate: no tag needed) and returns its new tag.
    @discardableResult
    func update(_ zone: String = ZoneID.defaultZoneName, _ name: String, _ type: String, _ fields: [String: JSONValue],
                file: StaticString = #filePath, line: UInt = #line) throws -> String
    {
        try savedTag(try modify(zone, [(.forceUpdate, wireRecord(name, type, fields))]).first, file: file, line: line)
    }

    func delete(_ zone: String = ZoneID.defaultZoneName, _ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try modify(zone, [(.forceDelete, ["recordName": .string(name)])]).first
        guard case .deleted = result else {
            XCTFail("expected \(name) deleted, got \(String(describing: result))", file: file, line: line)
            throw SubscriptionTestFailure()
        }
    }

    func savedTag(_ result: RecordOperationResult?, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        guard case .saved(let record) = result else {
            XCTFail("expected a saved record, got \(String(describing: result))", file: file, line: line)
            throw SubscriptionTestFailure()
        }
        return record.changeTag
    }

    // MARK: Subscriptions

    /// A query subscription's wire dictionary.
    func querySubscription(_ id: String, type: String, zone: String = ZoneID.defaultZoneName, firesOn: [String]? = nil,
                           filterBy: [JSONValue] = [], firesOnce: Bool? = nil, desiredKeys: [String]? = nil) -> JSONValue
    {
        var members: [String: JSONValue] = [
            "subscriptionID": .string(id), "subscriptionType": "query", "zoneID": ["zoneName": .string(zone)],
            "query": ["recordType": .string(type), "filterBy": .array(filterBy)],
        ]
        if let firesOn { members["firesOn"] = .array(firesOn.map { .string($0) }) }
        if let firesOnce { members["firesOnce"] = .bool(firesOnce) }
        if let desiredKeys { members["notificationInfo"] = ["desiredKeys": .array(desiredKeys.map { .string($0) })] }
        return .object(members)
    }

    func zoneSubscription(_ id: String, zone: String, firesOnce: Bool? = nil) -> JSONValue {
        var members: [String: JSONValue] = ["subscriptionID": .string(id), "subscriptionType": "zone", "zoneID": ["zoneName": .string(zone)]]
        if let firesOnce { members["firesOnce"] = .bool(firesOnce) }
        return .object(members)
    }

    func databaseSubscription(_ id: String) -> JSONValue {
        ["subscriptionID": .string(id), "subscriptionType": "database"]
    }

    func equalsFilter(_ field: String, _ value: JSONValue) -> JSONValue {
        ["comparator": "EQUALS", "fieldName": .string(field), "fieldValue": ["value": value]]
    }

    /// Saves subscriptions; any per-item failure fails the test by throwing.
    func subscribe(_ subscriptions: JSONValue..., scope: DatabaseScope? = nil, file: StaticString = #filePath, line: UInt = #line) throws {
        let operations = try subscriptions.map { SubscriptionOperation.save(try Subscription(json: $0)) }
        for result in try store.modifySubscriptions(scope ?? dev, operations: operations) {
            if case .failure(let error) = result {
                XCTFail("subscription refused: \(error)", file: file, line: line)
                throw SubscriptionTestFailure()
            }
        }
    }

    func subscriptionIDs(_ scope: DatabaseScope? = nil) throws -> [String] {
        try store.listSubscriptions(scope ?? dev).map(\.subscriptionID)
    }

    // MARK: The outbox

    /// The `ck` dictionaries written since the last call (bounded read), advancing the cursor; the
    /// ids are checked to increase strictly.
    func newNotifications(file: StaticString = #filePath, line: UInt = #line) throws -> [JSONValue] {
        var out: [JSONValue] = []
        for _ in 0..<100 {
            let batch = try store.notifications(databaseID: databaseID, after: cursor, limit: 500)
            for notification in batch {
                XCTAssertGreaterThan(notification.id, cursor, "cursors must increase strictly", file: file, line: line)
                cursor = notification.id
                let payload = try JSONValue.parse(notification.payload)
                guard let ck = payload["ck"], ck.objectValue != nil else {
                    XCTFail("notification without ck: \(payload.serializedString())", file: file, line: line)
                    throw SubscriptionTestFailure()
                }
                out.append(ck)
            }
            if batch.count < 500 { return out }
        }
        XCTFail("the outbox never ran dry", file: file, line: line)
        throw SubscriptionTestFailure()
    }

    /// Asserts nothing was written to the outbox since the last read.
    func assertNoNotification(_ message: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let fresh = try newNotifications(file: file, line: line)
        XCTAssertEqual(fresh.count, 0, "\(message): unexpected \(fresh.map { $0.serializedString() })", file: file, line: line)
    }

    /// Reads new notifications and asserts there is exactly one; returns it.
    @discardableResult
    func singleNotification(_ message: String, file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let fresh = try newNotifications(file: file, line: line)
        guard fresh.count == 1 else {
            XCTFail("\(message): expected exactly one notification, got \(fresh.map { $0.serializedString() })", file: file, line: line)
            throw SubscriptionTestFailure()
        }
        return fresh[0]
    }

    /// Checks a query notification's `qry` dictionary and returns it.
    @discardableResult
    func assertQuery(_ ck: JSONValue, sid: String, rid: String, fo: Int64, zone: String = ZoneID.defaultZoneName,
                     af expected: [String: JSONValue]? = nil, file: StaticString = #filePath, line: UInt = #line) -> JSONValue?
    {
        XCTAssertEqual(ck["cid"], .string(Self.container), "cid", file: file, line: line)
        XCTAssertNotNil(ck["nid"]?.stringValue, "nid", file: file, line: line)
        XCTAssertNil(ck["fet"], "a query notification carries no fet", file: file, line: line)
        XCTAssertNil(ck["met"], "a query notification carries no met", file: file, line: line)
        guard let qry = ck["qry"] else {
            XCTFail("expected qry in \(ck.serializedString())", file: file, line: line)
            return nil
        }
        XCTAssertEqual(qry["sid"], .string(sid), "sid", file: file, line: line)
        XCTAssertEqual(qry["rid"], .string(rid), "rid", file: file, line: line)
        XCTAssertEqual(qry["fo"]?.int64Value, fo, "fo", file: file, line: line)
        XCTAssertEqual(qry["zid"], .string(zone), "zid", file: file, line: line)
        XCTAssertEqual(qry["zoid"], .string(user.recordName), "zoid", file: file, line: line)
        XCTAssertEqual(qry["dbs"]?.int64Value, 2, "dbs (private)", file: file, line: line)
        let af = qry["af"]?.objectValue ?? [:]
        if fo == 3 {
            XCTAssertEqual(af, [:], "a deletion carries the record name only", file: file, line: line)
        } else if let expected {
            XCTAssertEqual(af, expected, "af must hold exactly the desiredKeys", file: file, line: line)
        }
        return qry
    }

    func advanceClock(milliseconds: Int64) { clock.advance(milliseconds: milliseconds) }
}

struct SubscriptionTestFailure: Error {}
