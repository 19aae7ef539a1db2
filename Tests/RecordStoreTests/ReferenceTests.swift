import RecordModel
import RecordStore
import XCTest

/// References: `DELETE_SELF` cascades, `VALIDATE` checks, and parents.
final class ReferenceTests: StoreTestCase {
    let zone = ZoneID(zoneName: "ScorebookData")

    override func setUpWithError() throws {
        try super.setUpWithError()
        _ = try store.createZone(prod, zoneName: zone.zoneName)
        _ = try store.createZone(dev, zoneName: zone.zoneName)
    }

    /// Game ← Match ← Player ← Score, plus the Person each Player points at, in production (the
    /// field types come from the built-in schema, so no `type` is sent).
    func saveScorebookGraph() throws {
        let results = try modify(prod, zone: zone, [
            (.create, record("Game|~|G", "Game", ["name": field("Catan")])),
            (.create, record("Person|~|A", "Person", ["firstName": field("Ann")])),
            (.create, record("Person|~|B", "Person", ["firstName": field("Bob")])),
            (.create, record("Match|~|M", "Match", ["game": ref("Game|~|G", .deleteSelf), "startDate": field(1_763_800_000_000)])),
            (.create, record("Player|~|PA", "Player", ["match": ref("Match|~|M", .deleteSelf), "person": ref("Person|~|A", .deleteSelf)])),
            (.create, record("Player|~|PB", "Player", ["match": ref("Match|~|M", .deleteSelf), "person": ref("Person|~|B", .deleteSelf)])),
            (.create, record("Score|~|SA1", "Score", ["player": ref("Player|~|PA", .deleteSelf), "value": field(10.5), "round": field(1)])),
            (.create, record("Score|~|SA2", "Score", ["player": ref("Player|~|PA", .deleteSelf), "value": field(3), "round": field(2)])),
            (.create, record("Score|~|SB1", "Score", ["player": ref("Player|~|PB", .deleteSelf), "value": field(7.0), "round": field(1)])),
        ])
        XCTAssertEqual(results.compactMap(\.error).map(\.description), [], "the graph saves")
    }

    func testDeletingAGameCascadesThroughMatchPlayerAndScore() throws {
        try saveScorebookGraph()
        let token = try fetchChanges(prod, zone: zone).token

        let results = try modify(prod, zone: zone, [(.forceDelete, record("Game|~|G"))])
        XCTAssertEqual(results.count, 1)
        XCTAssertTrue(results[0].isDeleted)

        let cascaded = ["Game|~|G", "Match|~|M", "Player|~|PA", "Player|~|PB", "Score|~|SA1", "Score|~|SA2", "Score|~|SB1"]
        for name in cascaded { XCTAssertNil(try lookup(prod, zone: zone, name), "\(name) was cascaded") }
        XCTAssertNotNil(try lookup(prod, zone: zone, "Person|~|A"), "a Person is not below the Game")
        XCTAssertNotNil(try lookup(prod, zone: zone, "Person|~|B"))

        let changes = try fetchChanges(prod, zone: zone, from: token).state
        XCTAssertEqual(Set(changes.keys), Set(cascaded), "every cascaded deletion is in the change feed")
        XCTAssertTrue(changes.values.allSatisfy { $0 == nil }, "as tombstones")
    }

    func testDeletingAPersonCascadesOnlyToTheirPlayersAndScores() throws {
        try saveScorebookGraph()
        try modify(prod, zone: zone, [(.forceDelete, record("Person|~|A"))])
        XCTAssertNil(try lookup(prod, zone: zone, "Player|~|PA"))
        XCTAssertNil(try lookup(prod, zone: zone, "Score|~|SA1"))
        XCTAssertNil(try lookup(prod, zone: zone, "Score|~|SA2"))
        for name in ["Game|~|G", "Match|~|M", "Player|~|PB", "Score|~|SB1", "Person|~|B"] {
            XCTAssertNotNil(try lookup(prod, zone: zone, name), "\(name) survives")
        }
    }

    func testDeleteSelfInAReferenceListCascades() throws {
        try modify(dev, zone: zone, [
            (.create, record("p1", "Person")),
            (.create, record("p2", "Person")),
            (.create, record("team", "Team", ["members": field([
                ["recordName": "p1", "action": "DELETE_SELF"], ["recordName": "p2", "action": "DELETE_SELF"],
            ], "REFERENCE_LIST")])),
            (.create, record("banner", "Banner", ["team": ref("team", .deleteSelf)])),
        ])
        try modify(dev, zone: zone, [(.forceDelete, record("p2"))])
        XCTAssertNil(try lookup(dev, zone: zone, "team"), "deleting one element of a DELETE_SELF list deletes the holder")
        XCTAssertNil(try lookup(dev, zone: zone, "banner"), "and the cascade goes on from there")
        XCTAssertNotNil(try lookup(dev, zone: zone, "p1"))
    }

    func testACycleOfDeleteSelfReferencesIsDeletedOnce() throws {
        try save(dev, zone: zone, record("a", "Node"))
        try save(dev, zone: zone, record("b", "Node", ["next": ref("a", .deleteSelf)]))
        let a = try XCTUnwrap(try lookup(dev, zone: zone, "a"))
        try save(dev, zone: zone, .update, record("a", "Node", ["next": ref("b", .deleteSelf)], tag: a.changeTag))
        let results = try modify(dev, zone: zone, [(.forceDelete, record("a"))])
        XCTAssertTrue(results[0].isDeleted)
        XCTAssertNil(try lookup(dev, zone: zone, "a"))
        XCTAssertNil(try lookup(dev, zone: zone, "b"))
    }

    func testRemovingAReferenceStopsTheCascade() throws {
        try saveScorebookGraph()
        let score = try XCTUnwrap(try lookup(prod, zone: zone, "Score|~|SA1"))
        try save(prod, zone: zone, .update, record("Score|~|SA1", "Score", ["player": ["value": nil]], tag: score.changeTag))
        try modify(prod, zone: zone, [(.forceDelete, record("Player|~|PA"))])
        XCTAssertNotNil(try lookup(prod, zone: zone, "Score|~|SA1"), "the score no longer points at the player")
        XCTAssertNil(try lookup(prod, zone: zone, "Score|~|SA2"))
    }

    func testAValidateReferenceBlocksDeletingItsTargetEvenThroughACascade() throws {
        try save(dev, zone: zone, record("Game|~|G", "Game"))
        try save(dev, zone: zone, record("Match|~|M", "Match", ["game": ref("Game|~|G", .deleteSelf)]))
        try save(dev, zone: zone, record("Note|~|N", "Note", ["match": ref("Match|~|M", .validate)]))

        assertError(try modify(dev, zone: zone, [(.forceDelete, record("Match|~|M"))]).first, .validatingReferenceError, "direct")
        assertError(try modify(dev, zone: zone, [(.forceDelete, record("Game|~|G"))]).first, .validatingReferenceError,
                    "the cascade would delete a VALIDATE target")
        XCTAssertNotNil(try lookup(dev, zone: zone, "Game|~|G"), "the failed cascade deleted nothing")
        XCTAssertNotNil(try lookup(dev, zone: zone, "Match|~|M"))

        // Once the VALIDATE reference is gone, the delete goes through.
        try modify(dev, zone: zone, [(.forceDelete, record("Note|~|N"))])
        XCTAssertTrue(try modify(dev, zone: zone, [(.forceDelete, record("Game|~|G"))]).first?.isDeleted ?? false)
        XCTAssertNil(try lookup(dev, zone: zone, "Match|~|M"))
    }

    func testAValidateReferenceFromInsideTheCascadeDoesNotBlockIt() throws {
        try save(dev, zone: zone, record("m", "Match"))
        try save(dev, zone: zone, record("p", "Player", ["match": ref("m", .deleteSelf)]))
        try save(dev, zone: zone, record("n", "Note", ["match": ref("m", .deleteSelf), "player": ref("p", .validate)]))
        XCTAssertTrue(try modify(dev, zone: zone, [(.forceDelete, record("m"))]).first?.isDeleted ?? false)
        for name in ["m", "p", "n"] { XCTAssertNil(try lookup(dev, zone: zone, name)) }
    }

    func testSavingAReferenceToAMissingRecordFailsForDeleteSelfAndValidateOnly() throws {
        try save(dev, zone: zone, record("gone", "Game"))
        try modify(dev, zone: zone, [(.forceDelete, record("gone"))])

        for target in ["never", "gone"] {
            assertError(try modify(dev, zone: zone, [(.create, record("m1", "Match", ["game": ref(target, .deleteSelf)]))]).first,
                        .validatingReferenceError, "DELETE_SELF to \(target)")
            assertError(try modify(dev, zone: zone, [(.create, record("m2", "Match", ["game": ref(target, .validate)]))]).first,
                        .validatingReferenceError, "VALIDATE to \(target)")
            assertError(try modify(dev, zone: zone, [(.create, record("m3", "Match", ["games": field([
                ["recordName": .string(target), "action": "DELETE_SELF"],
            ], "REFERENCE_LIST")]))]).first, .validatingReferenceError, "DELETE_SELF list element to \(target)")
        }
        XCTAssertNotNil(try modify(dev, zone: zone, [(.create, record("m4", "Match", ["game": ref("never", .none)]))]).first?.savedRecord,
                        "a NONE reference may dangle")
        XCTAssertNil(try lookup(dev, zone: zone, "m1"))
    }

    func testTheParentMustExistOrBeSavedEarlierInTheRequest() throws {
        assertError(try modify(dev, zone: zone, [(.create, record("child", "Thing", [:], parent: "ghost"))]).first,
                    .validatingReferenceError)
        XCTAssertNil(try lookup(dev, zone: zone, "child"))

        let results = try modify(dev, zone: zone, [
            (.create, record("mom", "Thing")), (.create, record("child", "Thing", [:], parent: "mom")),
        ])
        XCTAssertEqual(results.compactMap(\.savedRecord).count, 2)
        XCTAssertEqual(try lookup(dev, zone: zone, "child")?.parent, "mom")

        let reversed = try modify(dev, zone: zone, [
            (.create, record("kid", "Thing", [:], parent: "dad")), (.create, record("dad", "Thing")),
        ])
        assertError(reversed[0], .validatingReferenceError, "a parent saved later in the request does not count")
    }

    func testReferencesSavedEarlierInTheSameBatchAreSeenByLaterDeletesAndSaves() throws {
        try save(dev, zone: zone, record("m", "Match"))
        let guarded = try modify(dev, zone: zone, [
            (.create, record("n", "Note", ["match": ref("m", .validate)])), (.forceDelete, record("m")),
        ])
        assertError(guarded[1], .validatingReferenceError, "a VALIDATE reference made earlier in the batch blocks the delete")
        assertError(guarded[0], .atomicError)
        XCTAssertNotNil(try lookup(dev, zone: zone, "m"))

        let dangling = try modify(dev, zone: zone, [
            (.forceDelete, record("m")), (.create, record("p", "Player", ["match": ref("m", .deleteSelf)])),
        ])
        assertError(dangling[1], .validatingReferenceError, "a DELETE_SELF reference to a record deleted earlier in the batch")
        XCTAssertNotNil(try lookup(dev, zone: zone, "m"), "the atomic batch was rolled back")
    }

    func testDeletingAParentDoesNotDeleteItsChildren() throws {
        try modify(dev, zone: zone, [(.create, record("mom", "Thing")), (.create, record("kid", "Thing", [:], parent: "mom"))])
        XCTAssertTrue(try modify(dev, zone: zone, [(.forceDelete, record("mom"))]).first?.isDeleted ?? false)
        XCTAssertEqual(try lookup(dev, zone: zone, "kid")?.parent, "mom", "parent is a NONE reference")
        // The orphan stays editable: its unchanged parent is not validated again…
        XCTAssertNil(try modify(dev, zone: zone, [(.forceUpdate, record("kid", "Thing", ["n": field(2)]))]).first?.error)
        XCTAssertNil(try modify(dev, zone: zone, [(.forceReplace, record("kid", "Thing", ["n": field(3)], parent: "mom"))]).first?.error)
        // …but pointing it at another missing parent is still refused.
        XCTAssertEqual(try modify(dev, zone: zone, [(.forceUpdate, record("kid", "Thing", [:], parent: "dad"))]).first?.error?.code,
                       .validatingReferenceError)
    }
}
