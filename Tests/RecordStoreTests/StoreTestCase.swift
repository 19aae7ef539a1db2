import Foundation
import RecordModel
import PostgresRecordStore
import RecordStore
import SQLiteRecordStore
import Synchronization
import TestSupport
import XCTest

/// The backends the store suite runs against. The same test bodies run on SQLite by default and
/// on PostgreSQL with `SCOREBOOK_STORE_BACKEND=postgres` (scripts/test.sh runs the suite both
/// ways); on PostgreSQL each test gets a fresh database of the run's throw-away cluster.
/// (Subclassing per backend is not an option here: XCTest's discovery on Linux does not run
/// inherited test methods.)
enum StoreBackend {
    case sqlite, postgres

    static var selected: StoreBackend {
        ProcessInfo.processInfo.environment["SCOREBOOK_STORE_BACKEND"]?.lowercased() == "postgres" ? .postgres : .sqlite
    }

    /// Opens the store; `directory` is the SQLite data directory, `postgresURL` the PostgreSQL database.
    func open(directory: URL, postgresURL: String?, clock: TestClock) throws -> any RecordStorage {
        switch self {
        case .sqlite:
            return SQLiteStorage(try SQLiteRecordStore(directory: directory.path, clock: clock.read))
        case .postgres:
            let url = postgresURL!
            let read = clock.read
            return try BlockingStore.run { try await PostgresRecordStore.open(url: url, clock: read) }
        }
    }
}

/// A clock the tests move by hand, so retention and timestamps are deterministic.
final class TestClock: Sendable {
    private let milliseconds: Mutex<Int64>

    init(milliseconds: Int64 = 1_763_800_000_000) { self.milliseconds = Mutex(milliseconds) }

    var now: Int64 { milliseconds.withLock { $0 } }

    /// A `@Sendable` reading of the clock that ticks by 1 ms per call, so successive writes have
    /// distinct, increasing timestamps.
    var read: @Sendable () -> Int64 {
        { [self] in
            milliseconds.withLock {
                $0 += 1
                return $0
            }
        }
    }

    func advance(milliseconds delta: Int64) { milliseconds.withLock { $0 += delta } }

    func advance(days: Int64) { advance(milliseconds: days * 86_400_000) }
}

/// Base class: a fresh store in a temporary directory for each test, a user `alice` with scopes in
/// both environments, and small helpers that keep the test bodies about behaviour.
class StoreTestCase: XCTestCase {
    static let container = "iCloud.scorebook.tests"

    var directory: URL!
    var clock: TestClock!
    var store: BlockingStore!
    /// The backend this run tests (`StoreBackend.selected`).
    class var backend: StoreBackend { StoreBackend.selected }
    /// This test's PostgreSQL database (PostgreSQL backend only).
    var postgresURL: String?
    var alice: User!
    /// Alice's private database in `development` (schema grows just in time).
    var dev: DatabaseScope!
    /// Alice's private database in `production` (the built-in Scorebook schema is enforced).
    var prod: DatabaseScope!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        clock = TestClock()
        if Self.backend == .postgres {
            if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
            postgresURL = try PostgresTestCluster.shared().createDatabase()
        }
        store = BlockingStore(try Self.backend.open(directory: directory, postgresURL: postgresURL, clock: clock))
        alice = try store.createUser(name: "alice").user
        dev = try scope(alice, .development)
        prod = try scope(alice, .production)
    }

    /// Another store of this test's backend: SQLite in `directory`, or a new PostgreSQL database.
    func makeRecordStorage(directory: URL, clock: TestClock) throws -> BlockingStore {
        let url = Self.backend == .postgres ? try PostgresTestCluster.shared().createDatabase() : nil
        return BlockingStore(try Self.backend.open(directory: directory, postgresURL: url, clock: clock))
    }

    /// A user's private database in the test container (or `container`).
    func scope(_ user: User, _ environment: Environment, container: String = StoreTestCase.container) throws -> DatabaseScope {
        DatabaseScope(user: user, container: container, environment: environment)
    }

    override func tearDownWithError() throws {
        store?.close()
        store = nil
        if let postgresURL, let name = postgresURL.split(separator: "/").last {
            try? PostgresTestCluster.shared().psql("DROP DATABASE IF EXISTS \(name)")
        }
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// Closes the store and opens a new one on the same directory.
    func reopenStore() throws {
        store.close()
        store = BlockingStore(try Self.backend.open(directory: directory, postgresURL: postgresURL, clock: clock))
    }

    // MARK: Building requests

    /// A wire record dictionary; `fields` maps a name to a wire field (`["value": …, "type": …]`).
    func record(_ name: String, _ type: String? = nil, _ fields: [String: JSONValue] = [:], tag: String? = nil,
                parent: String? = nil) -> JSONValue
    {
        var members: [String: JSONValue] = ["recordName": .string(name), "fields": .object(fields)]
        if let type { members["recordType"] = .string(type) }
        if let tag { members["recordChangeTag"] = .string(tag) }
        if let parent { members["parent"] = ["recordName": .string(parent)] }
        return .object(members)
    }

    /// A wire field; `type` nil leaves it to the schema or to inference.
    func field(_ value: JSONValue, _ type: String? = nil) -> JSONValue {
        var members: [String: JSONValue] = ["value": value]
        if let type { members["type"] = .string(type) }
        return .object(members)
    }

    func ref(_ target: String, _ action: ReferenceAction) -> JSONValue {
        field(["recordName": .string(target), "action": .string(action.rawValue)], "REFERENCE")
    }

    @discardableResult
    func modify(_ scope: DatabaseScope, zone: ZoneID = .default, atomic: Bool = true,
                _ operations: [(RecordOperationType, JSONValue)]) throws -> [RecordOperationResult]
    {
        try store.modifyRecords(scope, zone: zone, operations: operations.map { RecordOperation(type: $0.0, record: $0.1) },
                                atomic: atomic, deviceID: "test-device")
    }

    /// Creates one record and returns it; fails the test (by throwing) if the store refused it.
    @discardableResult
    func save(_ scope: DatabaseScope, zone: ZoneID = .default, _ record: JSONValue,
              file: StaticString = #filePath, line: UInt = #line) throws -> StoredRecord
    {
        try save(scope, zone: zone, .create, record, file: file, line: line)
    }

    /// Saves one record with the given operation and returns it; throws if the store refused it.
    @discardableResult
    func save(_ scope: DatabaseScope, zone: ZoneID = .default, _ type: RecordOperationType, _ record: JSONValue,
              file: StaticString = #filePath, line: UInt = #line) throws -> StoredRecord
    {
        let results = try modify(scope, zone: zone, [(type, record)])
        guard case .saved(let stored) = results.first else {
            XCTFail("expected a saved record, got \(String(describing: results.first))", file: file, line: line)
            throw StoreTestFailure()
        }
        return stored
    }

    /// The live record, or nil if the store answers NOT_FOUND.
    func lookup(_ scope: DatabaseScope, zone: ZoneID = .default, _ name: String) throws -> StoredRecord? {
        switch try store.lookupRecords(scope, zone: zone, recordNames: [name]).first! {
        case .success(let record): return record
        case .failure(let error):
            XCTAssertEqual(error.code, .notFound, "lookup of \(name)")
            return nil
        }
    }

    func fields(of record: StoredRecord?) throws -> [String: FieldValue] {
        guard let record else { return [:] }
        return try record.record().fields
    }

    /// The whole change feed from `token`, page by page (bounded), folded into the latest state per
    /// record: a record's dictionary, or nil for a tombstone.
    func fetchChanges(_ scope: DatabaseScope, zone: ZoneID = .default, from token: String? = nil, resultsLimit: Int = 400,
                      file: StaticString = #filePath, line: UInt = #line) throws
        -> (state: [String: StoredRecord?], token: String, pages: Int)
    {
        var state: [String: StoredRecord?] = [:]
        var token = token
        for page in 1...10_000 {
            let answer = try store.zoneChanges(scope, zone: zone, syncToken: token, resultsLimit: resultsLimit, recordTypes: nil)
            XCTAssertLessThanOrEqual(answer.changes.count, resultsLimit, "page size", file: file, line: line)
            var namesInPage = Set<String>()
            for change in answer.changes {
                switch change {
                case .changed(let record):
                    XCTAssertTrue(namesInPage.insert(record.recordName).inserted, "\(record.recordName) twice in one page", file: file, line: line)
                    state[record.recordName] = .some(record)
                case .deleted(let name, _, _):
                    XCTAssertTrue(namesInPage.insert(name).inserted, "\(name) twice in one page", file: file, line: line)
                    state[name] = .some(nil)
                }
            }
            token = answer.syncToken
            if !answer.moreComing { return (state, answer.syncToken, page) }
        }
        XCTFail("the change feed never stopped saying moreComing", file: file, line: line)
        throw StoreTestFailure()
    }

    func assertError(_ result: RecordOperationResult?, _ code: ServerErrorCode, _ message: String = "",
                     file: StaticString = #filePath, line: UInt = #line)
    {
        guard case .failed(let error) = result else {
            XCTFail("expected \(code.rawValue), got \(String(describing: result)) \(message)", file: file, line: line)
            return
        }
        XCTAssertEqual(error.code, code, "\(error.reason) \(message)", file: file, line: line)
    }

    /// Runs `body` and checks it throws a `ServerError` with `code`; returns the error.
    @discardableResult
    func assertThrows<T>(_ code: ServerErrorCode, file: StaticString = #filePath, line: UInt = #line,
                         _ body: () throws -> T) -> ServerError?
    {
        do {
            let value = try body()
            XCTFail("expected \(code.rawValue), got \(value)", file: file, line: line)
        } catch let error as ServerError {
            XCTAssertEqual(error.code, code, error.reason, file: file, line: line)
            return error
        } catch {
            XCTFail("expected ServerError \(code.rawValue), got \(error)", file: file, line: line)
        }
        return nil
    }
}

struct StoreTestFailure: Error {}

extension RecordOperationResult {
    var savedRecord: StoredRecord? {
        if case .saved(let record) = self { return record }
        return nil
    }

    var error: ServerError? {
        if case .failed(let error) = self { return error }
        return nil
    }

    var isDeleted: Bool {
        if case .deleted = self { return true }
        return false
    }
}
