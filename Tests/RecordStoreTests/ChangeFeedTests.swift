import Foundation
import RecordModel
import RecordStore
import Synchronization
import XCTest
import TestSupport

/// A zone's change feed: latest state per record, tombstones, paging that never
/// skips even under concurrent writes, token validation and expiry.
final class ChangeFeedTests: StoreTestCase {
    func testTheFeedGivesEachRecordOnceInItsLatestStateWithTombstones() throws {
        let a = try save(dev, record("a", "Thing", ["n": field(1, "INT64")]))
        try save(dev, record("b", "Thing"))
        try save(dev, .update, record("a", "Thing", ["n": field(2, "INT64")], tag: a.changeTag))
        try modify(dev, [(.forceDelete, record("b"))])
        try save(dev, record("c", "Thing"))

        let page = try store.zoneChanges(dev, zone: .default, syncToken: nil, resultsLimit: 400, recordTypes: nil)
        XCTAssertFalse(page.moreComing)
        XCTAssertEqual(page.changes.count, 3, "a, b and c once each")
        let feed = try fetchChanges(dev).state
        XCTAssertEqual(try fields(of: feed["a"]!)["n"], .int64(2), "a in its latest state")
        XCTAssertEqual(feed["b"].map { $0 == nil }, true, "b as a tombstone")
        XCTAssertNotNil(feed["c"]!)
        guard case .deleted(_, let type, _)? = page.changes.first(where: { if case .deleted = $0 { return true } else { return false } }) else {
            return XCTFail("no tombstone in \(page.changes)")
        }
        XCTAssertEqual(type, "Thing", "a tombstone carries its record type")
    }

    func testATokenResumesAfterWhatItCoveredAndAnUpToDateTokenGetsNothing() throws {
        try save(dev, record("a", "Thing"))
        let first = try fetchChanges(dev)
        XCTAssertEqual(Set(first.state.keys), ["a"])
        let empty = try store.zoneChanges(dev, zone: .default, syncToken: first.token, resultsLimit: 400, recordTypes: nil)
        XCTAssertTrue(empty.changes.isEmpty)
        XCTAssertFalse(empty.moreComing)

        try save(dev, record("b", "Thing"))
        XCTAssertEqual(Set(try fetchChanges(dev, from: first.token).state.keys), ["b"], "only what changed after the token")
        XCTAssertEqual(Set(try fetchChanges(dev, from: first.token).state.keys), ["b"], "a token can be used again")
    }

    func testSmallPagesFollowMoreComingThroughEveryChange() throws {
        try modify(dev, (0..<23).map { (.create, record("r\($0)", "Thing", ["i": field(.int(Int64($0)), "INT64")])) })
        let result = try fetchChanges(dev, resultsLimit: 5)
        XCTAssertEqual(result.state.count, 23)
        XCTAssertEqual(result.pages, 5)
        XCTAssertTrue(result.state.values.allSatisfy { $0 != nil })
    }

    func testDesiredRecordTypesFilterButStillAdvanceTheToken() throws {
        try save(dev, record("t1", "Thing"))
        try save(dev, record("o1", "Other"))
        let page = try store.zoneChanges(dev, zone: .default, syncToken: nil, resultsLimit: 400, recordTypes: ["Other"])
        XCTAssertEqual(page.changes.count, 1)
        let rest = try store.zoneChanges(dev, zone: .default, syncToken: page.syncToken, resultsLimit: 400, recordTypes: nil)
        XCTAssertTrue(rest.changes.isEmpty)
    }

    /// The contract's central promise: a client paging with a small `resultsLimit` while another
    /// thread writes ends, after a final drain, with exactly the zone's state — nothing skipped.
    func testPagingWhileAnotherThreadWritesNeverSkipsAChange() throws {
        let zone = ZoneID(zoneName: "Busy")
        _ = try store.createZone(dev, zoneName: "Busy")
        try modify(dev, zone: zone, (0..<20).map { (.create, record("r\($0)", "Thing", ["v": field(0, "INT64")])) })
        let start = try store.zoneChanges(dev, zone: zone, syncToken: nil, resultsLimit: 1, recordTypes: nil).syncToken

        let writer = ConcurrentWriter(store: store, scope: dev, zone: zone, names: (0..<30).map { "r\($0)" })
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            writer.run(iterations: 120)
            done.signal()
        }

        var state: [String: StoredRecord?] = [:]
        var token = start
        var writerFinished = false
        var caughtUpWhileWriting = 0
        // Keep paging while the writer runs, then drain once more after it has finished (bounded by
        // a deadline; when caught up, wait a millisecond for the writer instead of spinning).
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let page = try store.zoneChanges(dev, zone: zone, syncToken: token, resultsLimit: 3, recordTypes: nil)
            XCTAssertLessThanOrEqual(page.changes.count, 3)
            for change in page.changes {
                switch change {
                case .changed(let record): state[record.recordName] = .some(record)
                case .deleted(let name, _, _): state[name] = .some(nil)
                }
            }
            token = page.syncToken
            if !page.moreComing {
                if writerFinished { break }
                writerFinished = done.wait(timeout: .now() + .milliseconds(1)) == .success
                if !writerFinished { caughtUpWhileWriting += 1 }
            }
        }
        XCTAssertTrue(writerFinished, "the writer finished")
        XCTAssertNil(writer.failure, "the writer's own operations all succeeded")
        XCTAssertGreaterThan(caughtUpWhileWriting, 0, "the reader caught up with the writer mid-run, so its pages interleaved with commits")

        // The reader's view must equal the writer's final truth, record by record and tag by tag.
        let truth = writer.finalState()
        for name in (0..<30).map({ "r\($0)" }) {
            let seenTag = state[name].flatMap { $0?.changeTag }
            let stored = try lookup(dev, zone: zone, name)
            XCTAssertEqual(seenTag, stored?.changeTag, "\(name): the feed's latest state is the store's")
            if let lastWrite = truth[name] {
                XCTAssertEqual(stored?.changeTag, lastWrite, "\(name): the store holds the writer's last write")
            }
        }
    }

    func testATokenOfAnotherZoneOrUserOrGarbageIsBadRequest() throws {
        _ = try store.createZone(dev, zoneName: "A")
        _ = try store.createZone(dev, zoneName: "B")
        try save(dev, zone: ZoneID(zoneName: "A"), record("r", "Thing"))
        let tokenOfA = try fetchChanges(dev, zone: ZoneID(zoneName: "A")).token
        assertThrows(.badRequest) {
            try store.zoneChanges(dev, zone: ZoneID(zoneName: "B"), syncToken: tokenOfA, resultsLimit: 10, recordTypes: nil)
        }

        let bob = try store.createUser(name: "bob").user
        let bobScope = try scope(bob, .development)
        _ = try store.createZone(bobScope, zoneName: "A")
        assertThrows(.badRequest) {
            try store.zoneChanges(bobScope, zone: ZoneID(zoneName: "A"), syncToken: tokenOfA, resultsLimit: 10, recordTypes: nil)
        }
        let aliceDefault = try fetchChanges(dev).token
        assertThrows(.badRequest) {
            try store.zoneChanges(bobScope, zone: .default, syncToken: aliceDefault, resultsLimit: 10, recordTypes: nil)
        }
        let otherContainer = try scope(alice, .development, container: "iCloud.other")
        assertThrows(.badRequest) {
            try store.zoneChanges(otherContainer, zone: .default, syncToken: aliceDefault, resultsLimit: 10, recordTypes: nil)
        }
        for garbage in ["", "garbage", "Zm9v", String(repeating: "A", count: 5000)] {
            assertThrows(.badRequest) { try store.zoneChanges(dev, zone: .default, syncToken: garbage, resultsLimit: 10, recordTypes: nil) }
        }
        let databaseToken = try store.databaseChanges(dev, syncToken: nil, resultsLimit: 10).syncToken
        assertThrows(.badRequest) { try store.zoneChanges(dev, zone: .default, syncToken: databaseToken, resultsLimit: 10, recordTypes: nil) }
    }

    func testATokenOfAnotherStoreIsBadRequest() throws {
        let otherDirectory = directory.appendingPathComponent("other")
        let other = try makeRecordStorage(directory: otherDirectory, clock: clock)
        defer { other.close() }
        let otherAlice = try other.createUser(name: "alice").user
        let otherScope = DatabaseScope(user: otherAlice, container: Self.container, environment: .development)
        let foreign = try other.zoneChanges(otherScope, zone: .default, syncToken: nil, resultsLimit: 10, recordTypes: nil).syncToken
        assertThrows(.badRequest) { try store.zoneChanges(dev, zone: .default, syncToken: foreign, resultsLimit: 10, recordTypes: nil) }
    }

    func testPurgingTombstonesExpiresOlderTokensOnly() throws {
        try save(dev, record("a", "Thing"))
        try save(dev, record("b", "Thing"))
        let beforeDeletion = try fetchChanges(dev).token
        try modify(dev, [(.forceDelete, record("a"))])
        let afterDeletion = try fetchChanges(dev).token

        XCTAssertEqual(try store.purgeTombstones(olderThanMilliseconds: 30 * 86_400_000), 0, "a fresh tombstone is kept")
        XCTAssertNoThrow(try store.zoneChanges(dev, zone: .default, syncToken: beforeDeletion, resultsLimit: 10, recordTypes: nil))

        clock.advance(days: 31)
        XCTAssertEqual(try store.purgeTombstones(olderThanMilliseconds: 30 * 86_400_000), 1)
        assertThrows(.changeTokenExpired) {
            try store.zoneChanges(dev, zone: .default, syncToken: beforeDeletion, resultsLimit: 10, recordTypes: nil)
        }
        XCTAssertTrue(try store.zoneChanges(dev, zone: .default, syncToken: afterDeletion, resultsLimit: 10, recordTypes: nil).changes.isEmpty,
                      "a token newer than every purged tombstone stays valid")
        let fresh = try fetchChanges(dev).state
        XCTAssertEqual(Set(fresh.keys), ["b"], "a fetch without a token sees the live records; the purged tombstone is gone")
    }

    func testPurgingOldDeletedZonesExpiresOlderDatabaseTokens() throws {
        _ = try store.createZone(dev, zoneName: "Old")
        let before = try store.databaseChanges(dev, syncToken: nil, resultsLimit: 10).syncToken
        try store.deleteZone(dev, zoneName: "Old")
        let after = try store.databaseChanges(dev, syncToken: nil, resultsLimit: 10).syncToken
        clock.advance(days: 31)
        _ = try store.purgeTombstones(olderThanMilliseconds: 30 * 86_400_000)
        assertThrows(.changeTokenExpired) { try store.databaseChanges(dev, syncToken: before, resultsLimit: 10) }
        XCTAssertNoThrow(try store.databaseChanges(dev, syncToken: after, resultsLimit: 10))
    }
}

/// Writes creates, updates and deletes to a zone from its own thread and remembers the last change
/// tag it got for each record (nil once deleted).
final class ConcurrentWriter: Sendable {
    let store: BlockingStore
    let scope: DatabaseScope
    let zone: ZoneID
    let names: [String]
    private struct Seen {
        var tags: [String: String?] = [:]
        var failure: String?
    }

    private let seen = Mutex(Seen())
    var failure: String? { seen.withLock { $0.failure } }

    init(store: BlockingStore, scope: DatabaseScope, zone: ZoneID, names: [String]) {
        self.store = store
        self.scope = scope
        self.zone = zone
        self.names = names
    }

    func run(iterations: Int) {
        var generator = SplitMix64(seed: 42)
        for iteration in 0..<iterations {
            // Each batch touches two or three distinct records.
            var picked: [String] = []
            while picked.count < 2 + Int(generator.next() % 2) {
                let name = names[Int(generator.next() % UInt64(names.count))]
                if !picked.contains(name) { picked.append(name) }
            }
            let operations = picked.map { name -> RecordOperation in
                let deleting = generator.next() % 4 == 0
                let type: RecordOperationType = deleting ? .forceDelete : .forceUpdate
                let record: JSONValue = [
                    "recordName": .string(name), "recordType": "Thing",
                    "fields": ["v": ["value": .int(Int64(iteration)), "type": "INT64"]],
                ]
                return RecordOperation(type: type, record: record)
            }
            do {
                let results = try store.modifyRecords(scope, zone: zone, operations: operations, atomic: true, deviceID: "writer")
                seen.withLock { seen in
                    for result in results {
                        switch result {
                        case .saved(let record): seen.tags[record.recordName] = .some(record.changeTag)
                        case .deleted(let name): seen.tags[name] = .some(nil)
                        case .failed(let error): seen.failure = seen.failure ?? error.description
                        }
                    }
                }
            } catch {
                seen.withLock { $0.failure = $0.failure ?? "\(error)" }
            }
        }
    }

    /// The last tag the writer saw per record it touched (records it never touched are absent).
    func finalState() -> [String: String?] { seen.withLock { $0.tags } }
}

