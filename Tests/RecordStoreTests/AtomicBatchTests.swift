import RecordModel
import RecordStore
import XCTest

/// `atomic` batches: all or nothing, with the failing operation's own code and
/// `ATOMIC_ERROR` on the others; non-atomic batches apply what succeeds.
final class AtomicBatchTests: StoreTestCase {
    func testAFailingOperationRollsBackTheWholeAtomicBatch() throws {
        let existing = try save(dev, record("keep", "Game", ["name": field("Keep", "STRING")]))
        try save(dev, record("doomed", "Game"))
        let before = try store.zoneChanges(dev, zone: .default, syncToken: nil, resultsLimit: 400, recordTypes: nil)

        let results = try modify(dev, [
            (.create, record("new1", "Game", ["name": field("New", "STRING")])),
            (.update, record("keep", "Game", ["name": field("Changed", "STRING")], tag: existing.changeTag)),
            (.forceDelete, record("doomed")),
            (.update, record("missing", "Game", [:], tag: "x")),  // NOT_FOUND
            (.create, record("new2", "Game")),
        ])
        XCTAssertEqual(results.count, 5)
        assertError(results[0], .atomicError)
        assertError(results[1], .atomicError)
        assertError(results[2], .atomicError)
        assertError(results[3], .notFound, "the failing operation keeps its own code")
        assertError(results[4], .atomicError)
        XCTAssertEqual(results.map { $0.error?.recordName }, ["new1", "keep", "doomed", "missing", "new2"])

        XCTAssertNil(try lookup(dev, "new1"))
        XCTAssertNil(try lookup(dev, "new2"))
        XCTAssertNotNil(try lookup(dev, "doomed"), "the delete was rolled back")
        let kept = try XCTUnwrap(try lookup(dev, "keep"))
        XCTAssertEqual(kept.changeTag, existing.changeTag)
        XCTAssertEqual(try fields(of: kept)["name"], .string("Keep"))

        let after = try store.zoneChanges(dev, zone: .default, syncToken: before.syncToken, resultsLimit: 400, recordTypes: nil)
        XCTAssertTrue(after.changes.isEmpty, "a rolled-back batch leaves no change-log entry")
        XCTAssertEqual(after.syncToken, before.syncToken, "the zone's change sequence did not move")
    }

    func testAtomicIsTheDefaultAndEachFailureKindKeepsItsCode() throws {
        let v1 = try save(dev, record("a", "Game"))
        try save(dev, .update, record("a", "Game", ["n": field(1, "INT64")], tag: v1.changeTag))
        try save(dev, record("target", "Game"))
        try save(dev, record("guard", "Rule", ["target": ref("target", .validate)]))

        let results = try modify(dev, [
            (.create, record("a", "Game")),  // EXISTS
            (.update, record("b", "Game", [:], tag: "t")),  // NOT_FOUND
            (.create, record("c", "Game", ["parentRef": ref("ghost", .deleteSelf)])),  // VALIDATING_REFERENCE_ERROR
            (.delete, record("target", nil, tag: "stale")),  // CONFLICT
            (.create, record("ok", "Game")),
        ])
        assertError(results[0], .exists)
        assertError(results[1], .notFound)
        assertError(results[2], .validatingReferenceError)
        assertError(results[3], .conflict)
        assertError(results[4], .atomicError)
        XCTAssertNil(try lookup(dev, "ok"))
    }

    func testANonAtomicBatchAppliesWhatSucceeds() throws {
        let token = try fetchChanges(dev).token
        let results = try modify(dev, atomic: false, [
            (.create, record("n1", "Game")),
            (.update, record("missing", "Game", [:], tag: "x")),
            (.create, record("n2", "Game", ["name": field("Two", "STRING")])),
        ])
        XCTAssertNotNil(results[0].savedRecord)
        assertError(results[1], .notFound)
        XCTAssertNotNil(results[2].savedRecord)
        XCTAssertNotNil(try lookup(dev, "n1"))
        XCTAssertNotNil(try lookup(dev, "n2"))
        XCTAssertNil(try lookup(dev, "missing"))

        let changes = try fetchChanges(dev, from: token).state
        XCTAssertEqual(Set(changes.keys), ["n1", "n2"], "the change feed shows exactly the applied operations")
    }

    func testLaterOperationsSeeEarlierOnesOfTheSameBatch() throws {
        let results = try modify(dev, [
            (.create, record("game", "Game")),
            (.create, record("match", "Match", ["game": ref("game", .validate)], parent: "game")),
        ])
        XCTAssertNotNil(results[0].savedRecord)
        XCTAssertNotNil(results[1].savedRecord, "a VALIDATE target and a parent saved earlier in the request count")
        XCTAssertEqual(try lookup(dev, "match")?.parent, "game")
    }

    func testARolledBackBatchDoesNotTeachTheDevelopmentSchema() throws {
        // `mood` would be learned as STRING by the first operation; the batch fails, so it must not be.
        let results = try modify(dev, [
            (.create, record("p1", "Person", ["mood": field("happy", "STRING")])),
            (.update, record("missing", "Person", [:], tag: "x")),
        ])
        assertError(results[1], .notFound)
        XCTAssertNotNil(try modify(dev, [(.create, record("p2", "Person", ["mood": field(7, "INT64")]))]).first?.savedRecord,
                        "mood is still free to be INT64")
    }

    func testARolledBackBatchRestoresEveryRecordItsCascadeDeleted() throws {
        try modify(dev, [
            (.create, record("game", "Game")), (.create, record("match", "Match", ["game": ref("game", .deleteSelf)])),
            (.create, record("player", "Player", ["match": ref("match", .deleteSelf)])),
        ])
        let token = try fetchChanges(dev).token
        let results = try modify(dev, [(.forceDelete, record("game")), (.update, record("missing", "Thing", [:], tag: "x"))])
        assertError(results[0], .atomicError)
        assertError(results[1], .notFound)
        for name in ["game", "match", "player"] { XCTAssertNotNil(try lookup(dev, name), "\(name) is back") }
        XCTAssertTrue(try fetchChanges(dev, from: token).state.isEmpty, "no cascaded tombstone reached the change feed")
    }
}
