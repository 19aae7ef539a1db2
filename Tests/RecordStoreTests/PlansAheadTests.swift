import Foundation
import RecordModel
import RecordStore
import XCTest

/// A SQLite batch's creates are planned on another thread while the write thread inserts
/// (`PlansAhead`). The batch's outcome must not depend on whether a plan was made there: a name
/// already taken, a field the batch teaches the development schema, a record refused after it
/// taught one, all answer as when every record is planned in turn on the write thread.
final class PlansAheadTests: StoreTestCase {
    /// A batch of 120 operations with every case the planner must hand back, run once with every
    /// create planned ahead (the write thread waits for the planner first) and once with none, each
    /// in its own container (so each learns its own development schema): same results, same records.
    func testABatchPlannedAheadEndsAsOnePlannedRecordByRecord() throws {
        guard Self.backend == .sqlite else { throw XCTSkip("plans are made ahead on the SQLite write path only") }
        let ahead = try scope(alice, .development, container: "iCloud.ahead")
        let inTurn = try scope(alice, .development, container: "iCloud.in-turn")
        for scope in [ahead, inTurn] {
            try save(scope, record("taken-7", "Kite", ["span": field(1, "INT64"), "note": field("first", "STRING")]))
            try save(scope, record("old-1", "Kite", ["span": field(2, "INT64")]))
        }
        func batch() -> [(RecordOperationType, JSONValue)] {
            (0..<120).map { index -> (RecordOperationType, JSONValue) in
                switch index {
                case 7: return (.create, record("taken-7", "Kite", ["span": field(7)]))  // exists already
                case 20: return (.create, record("k20", "Kite", ["tail": field("long", "STRING")]))  // teaches tail: STRING
                case 25: return (.create, record("k25", "Kite", ["tail": field(2.5, "DOUBLE")]))  // refused: tail is a STRING now
                case 30: return (.create, record("k30", "Kite", ["tail": field("short")]))  // typed by what k20 taught
                case 40: return (.create, record("k40", "Kite", ["wing": field(3, "INT64"), "story": field(.string(String(repeating: "x", count: 1_000_001)), "STRING")]))
                case 45: return (.create, record("k45", "Kite", ["wing": field("broad", "STRING")]))  // k40 was refused: it taught nothing
                case 50: return (.forceUpdate, record("old-1", "Kite", ["span": field(50)]))
                case 60: return (.create, record("bad name\u{0}", "Kite", ["span": field(60)]))
                case 70: return (.forceDelete, record("never-was", "Kite"))
                case 80: return (.create, record("k80", "Kite", ["span": field("wide", "STRING")]))  // refused: span is an INT64
                default: return (.create, record("k\(index)", "Kite", ["span": field(.int(Int64(index))), "note": field(.string("n\(index)"))]))
                }
            }
        }

        PlansAhead.waitsForEveryPlan.store(true, ordering: .relaxed)
        let takenBefore = PlansAhead.plansTaken.load(ordering: .relaxed)
        let aheadResults = try modify(ahead, atomic: false, batch())
        PlansAhead.waitsForEveryPlan.store(false, ordering: .relaxed)
        let taken = PlansAhead.plansTaken.load(ordering: .relaxed) - takenBefore

        PlansAhead.isEnabled.store(false, ordering: .relaxed)
        defer { PlansAhead.isEnabled.store(true, ordering: .relaxed) }
        let takenBeforeInTurn = PlansAhead.plansTaken.load(ordering: .relaxed)
        let inTurnResults = try modify(inTurn, atomic: false, batch())
        XCTAssertEqual(PlansAhead.plansTaken.load(ordering: .relaxed), takenBeforeInTurn, "planned in turn: no plan made ahead")

        if ProcessInfo.processInfo.activeProcessorCount > 1 {
            // Every create but those that name a field the schema did not know as the batch began
            // (k20, k25, k30, k40, k45), break it (k80) or have a bad name (60); and the update and
            // delete. The taken name's plan is taken, and found wanting when its insert yields.
            XCTAssertEqual(taken, 120 - 9, "the creates were planned ahead")
        }
        let expected: [Int: ServerErrorCode] = [7: .exists, 25: .badRequest, 40: .limitExceeded, 60: .badRequest, 80: .badRequest]
        for (index, (first, second)) in zip(aheadResults, inTurnResults).enumerated() {
            XCTAssertEqual(first.error?.code, expected[index], "operation \(index) planned ahead")
            XCTAssertEqual(second.error?.code, expected[index], "operation \(index) planned in turn")
            XCTAssertEqual(first.savedRecord?.recordName, second.savedRecord?.recordName, "operation \(index)")
            XCTAssertEqual(try first.savedRecord?.record().fields, try second.savedRecord?.record().fields, "operation \(index)")
        }
        XCTAssertEqual(try fields(of: try lookup(ahead, "k30"))["tail"], .string("short"), "typed by the field k20 taught")
        XCTAssertEqual(try fields(of: try lookup(ahead, "k45"))["wing"], .string("broad"), "a refused record taught nothing")
        XCTAssertEqual(try fields(of: try lookup(ahead, "k119"))["span"], .int64(119))
        XCTAssertEqual(try fields(of: try lookup(ahead, "taken-7"))["span"], .int64(1), "a taken name is not written over")
    }

    /// Two stores writing batches at once share the process's one helper thread: each batch's
    /// plans queue behind the other's, and every record still lands in its own store as sent.
    func testTwoStoresWritingAtOnceEachSaveTheirOwnRecords() throws {
        guard Self.backend == .sqlite else { throw XCTSkip("plans are made ahead on the SQLite write path only") }
        let otherDirectory = directory.appendingPathComponent("other")
        try FileManager.default.createDirectory(at: otherDirectory, withIntermediateDirectories: true)
        let other = try makeRecordStorage(directory: otherDirectory, clock: clock)
        defer { other.close() }
        let bob = try other.createUser(name: "bob").user
        let bobScope = try scope(bob, .development)
        let failures = LockedArray<String>()
        let group = DispatchGroup()
        for (writer, (store, scope)) in [(store!, dev!), (other, bobScope)].enumerated() {
            // Made here: the writer thread gets the batches, not the test case.
            let batches = (0..<8).map { batch in
                (0..<100).map { index in
                    RecordOperation(type: .create, record: record("w\(writer)-\(batch)-\(index)", "Kite",
                                                                  ["span": field(.int(Int64(index))), "note": field(.string("writer \(writer)"))]))
                }
            }
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                for (batch, operations) in batches.enumerated() {
                    do {
                        let results = try store.modifyRecords(scope, zone: .default, operations: operations, atomic: true, deviceID: nil)
                        for (index, result) in results.enumerated() where result.savedRecord?.recordName != "w\(writer)-\(batch)-\(index)" {
                            failures.append("writer \(writer) batch \(batch) operation \(index): \(result)")
                        }
                    } catch {
                        failures.append("writer \(writer) batch \(batch): \(error)")
                    }
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success, "both writers finished")
        XCTAssertEqual(failures.values, [])
        XCTAssertEqual(try fields(of: try lookup(dev, "w0-7-99"))["note"], .string("writer 0"))
        XCTAssertNil(try lookup(dev, "w1-7-99"), "the other store's record is not in this one")
        let bobsRecord = try other.lookupRecords(bobScope, zone: .default, recordNames: ["w1-7-99"]).first
        XCTAssertEqual(try (try bobsRecord?.get())?.record().fields["note"], .string("writer 1"))
    }
}
