import Foundation
import PostgresRecordStore
import RecordModel
import RecordStore
import SQLiteRecordStore
import Synchronization
import XCTest

/// `records/modify` is set-based: a batch is a bounded number of statements however many
/// operations it carries (its records read in one, its rows written in a few), on both backends.
final class ModifyStatementTests: StoreTestCase {
    /// The store's engine over a driver that counts the statements its scripts run.
    private func countingEngine() throws -> (StoreEngine, CountingDriver) {
        let engine: StoreEngine
        switch store.base {
        case let sqlite as SQLiteStorage: engine = sqlite.engine
        case let postgres as PostgresRecordStore: engine = postgres.engine
        default: throw XCTSkip("no engine behind this store")
        }
        let counting = CountingDriver(engine.driver)
        let clock = self.clock!
        return (StoreEngine(driver: counting, storeID: engine.storeID, clock: clock.read), counting)
    }

    private func statements(of operations: [RecordOperation], _ engine: StoreEngine, _ counting: CountingDriver,
                            atomic: Bool = true) throws -> (count: Int, results: [RecordOperationResult])
    {
        let scope = dev!
        let before = counting.statements.load(ordering: .relaxed)
        let results = try BlockingStore.run {
            try await engine.modifyRecords(scope, zone: .default, operations: operations, atomic: atomic, deviceID: "counted")
        }
        return (counting.statements.load(ordering: .relaxed) - before, results)
    }

    private func game(_ name: String, score: Int) -> JSONValue {
        record(name, "Game", ["title": field(.string("Game \(name)")), "score": field(.int(Int64(score)))])
    }

    func testABatchOfCreatesUpdatesOrDeletesIsABoundedNumberOfStatements() throws {
        let (engine, counting) = try countingEngine()
        // The first batch teaches the development schema the fields.
        _ = try statements(of: [RecordOperation(type: .create, record: game("warm-up", score: 0))], engine, counting)
        let names = (0..<300).map { "g\($0)" }

        let created = try statements(of: names.map { RecordOperation(type: .create, record: game($0, score: 1)) }, engine, counting)
        XCTAssertEqual(created.results.filter { if case .saved = $0 { return true } else { return false } }.count, 300)
        XCTAssertLessThanOrEqual(created.count, 16, "300 creates")

        let updated = try statements(of: names.map { RecordOperation(type: .forceUpdate, record: game($0, score: 2)) }, engine, counting)
        XCTAssertLessThanOrEqual(updated.count, 16, "300 updates")
        XCTAssertEqual(try fields(of: try lookup(dev, "g299"))["score"]?.value, .int(2))

        let deleted = try statements(of: names.map { RecordOperation(type: .forceDelete, record: record($0)) }, engine, counting)
        XCTAssertEqual(deleted.results.filter { if case .deleted = $0 { return true } else { return false } }.count, 300)
        XCTAssertLessThanOrEqual(deleted.count, 16, "300 deletes")
        XCTAssertNil(try lookup(dev, "g0"))
        XCTAssertNotNil(try lookup(dev, "warm-up"))
    }

    func testACascadeReadsTheReferencesOncePerLevelAndFailedOperationsLeaveNoTrace() throws {
        let (engine, counting) = try countingEngine()
        try save(dev, record("root", "Game"))
        // 200 children of the root, 200 grandchildren of them, all DELETE_SELF; one more whose
        // operation fails (it refers to a record that does not exist) in the same batch.
        var operations = (0..<200).map { RecordOperation(type: .create, record: record("c\($0)", "Note", ["of": ref("root", .deleteSelf)])) }
        operations += (0..<200).map { RecordOperation(type: .create, record: record("d\($0)", "Note", ["of": ref("c\($0)", .deleteSelf)])) }
        operations[399] = RecordOperation(type: .create, record: record("d199", "Note", ["of": ref("missing", .validate)]))
        let saved = try statements(of: operations, engine, counting, atomic: false)
        guard case .failed(let error) = saved.results[399] else { return XCTFail("\(saved.results[399])") }
        XCTAssertEqual(error.code, .validatingReferenceError)
        XCTAssertNil(try lookup(dev, "d199"), "the failed operation wrote nothing")
        XCTAssertNotNil(try lookup(dev, "d198"))

        let deleted = try statements(of: [RecordOperation(type: .forceDelete, record: record("root"))], engine, counting)
        guard case .deleted = deleted.results[0] else { return XCTFail("\(deleted.results[0])") }
        XCTAssertLessThanOrEqual(deleted.count, 20, "a cascade over 399 records, two levels deep")
        XCTAssertNil(try lookup(dev, "c0"))
        XCTAssertNil(try lookup(dev, "d198"))
        let changes = try store.zoneChanges(dev, zone: .default, syncToken: nil, resultsLimit: 1_000, recordTypes: nil)
        let deletions = changes.changes.filter { if case .deleted = $0 { return true } else { return false } }
        XCTAssertEqual(deletions.count, 400, "the root, its 200 children and their 199 children")
    }
}

/// A driver that counts the statements run through its connections.
final class CountingDriver: StoreDriver {
    let base: any StoreDriver
    let statements = Atomic<Int>(0)

    init(_ base: any StoreDriver) { self.base = base }

    var dialect: SQLDialect { base.dialect }

    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> T) async throws -> T {
        try await base.read { try await body(CountingConnection(base: $0, driver: self)) }
    }

    func writeTransaction<T: Sendable>(_ body: @escaping @Sendable (any StoreConnection) async throws -> TransactionOutcome<T>) async throws -> T {
        try await base.writeTransaction { try await body(CountingConnection(base: $0, driver: self)) }
    }

    func announceCommit(of databaseID: Int64, _ connection: any StoreConnection) async throws {
        try await base.announceCommit(of: databaseID, (connection as? CountingConnection)?.base ?? connection)
    }
}

struct CountingConnection: StoreConnection {
    let base: any StoreConnection
    let driver: CountingDriver

    var dialect: SQLDialect { base.dialect }

    func rows(_ sql: String, _ arguments: [SQLValue]) async throws -> [StoreRow] {
        driver.statements.add(1, ordering: .relaxed)
        return try await base.rows(sql, arguments)
    }

    func forEachRow(_ sql: String, _ arguments: [SQLValue], _ row: (any StoreCursor) throws -> Void) async throws {
        driver.statements.add(1, ordering: .relaxed)
        try await base.forEachRow(sql, arguments, row)
    }

    func execute(_ sql: String, _ arguments: [SQLValue]) async throws -> Int {
        driver.statements.add(1, ordering: .relaxed)
        return try await base.execute(sql, arguments)
    }

    func insertRows(into table: String, columns: [StoreColumn], rows: [[SQLValue]], suffix: String) async throws -> [StoreRow] {
        driver.statements.add(1, ordering: .relaxed)
        return try await base.insertRows(into: table, columns: columns, rows: rows, suffix: suffix)
    }
}
