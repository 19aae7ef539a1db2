import Foundation
import PostgresRecordStore
import RecordModel
import RecordStore
import TestSupport
import XCTest

/// What one writer in one process cannot show: two stores (two daemons' connection pools) write
/// one zone of one database at once while a reader pages the change feed and the notification
/// outbox with small pages. Sequences are taken under the database's and the zone's row locks,
/// so they commit in order: after a final drain the reader holds exactly the stored state and
/// every notification once. Runs in every test run (it needs PostgreSQL, not the selected backend).
final class PostgresConcurrencyTests: XCTestCase {
    func testTwoStoresWritingOneZoneNeverMakeTheFeedOrTheOutboxSkip() throws {
        if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
        let url = try PostgresTestCluster.shared().createDatabase()
        let first = BlockingStore(try BlockingStore.run { try await PostgresRecordStore.open(url: url) })
        let second = BlockingStore(try BlockingStore.run { try await PostgresRecordStore.open(url: url) })
        defer {
            first.close()
            second.close()
        }
        let alice = try first.createUser(name: "alice").user
        let scope = DatabaseScope(user: alice, container: "iCloud.scorebook.tests", environment: .development)
        let zone = ZoneID(zoneName: "Busy")
        _ = try first.createZone(scope, zoneName: "Busy")
        let names = (0..<24).map { "r\($0)" }
        let seed = names.map {
            RecordOperation(type: .create, record: ["recordName": .string($0), "recordType": "Thing", "fields": ["v": ["value": 0, "type": "INT64"]]])
        }
        _ = try first.modifyRecords(scope, zone: zone, operations: seed, atomic: true, deviceID: "seed")
        let subscription = try Subscription(json: [
            "subscriptionID": "things", "subscriptionType": "query", "zoneID": ["zoneName": "Busy"],
            "query": ["recordType": "Thing"], "firesOn": ["create", "update", "delete"],
        ])
        _ = try second.modifySubscriptions(scope, operations: [.save(subscription)])
        let channel = try first.createPushToken(scope, apnsEnvironment: "development")
        let start = try second.zoneChanges(scope, zone: zone, syncToken: nil, resultsLimit: 1, recordTypes: nil).syncToken

        let writers = [first, second].map { ConcurrentWriter(store: $0, scope: scope, zone: zone, names: names) }
        let finished = DispatchGroup()
        for writer in writers {
            finished.enter()
            Thread.detachNewThread {
                writer.run(iterations: 60)
                finished.leave()
            }
        }

        var state: [String: String?] = [:]
        var token = start
        var cursor = channel.startCursor
        var delivered: [Int64] = []
        var writersDone = false
        var caughtUpWhileWriting = 0
        let deadline = Date().addingTimeInterval(120)
        // Alternate the reader between the two stores, as a client behind a load balancer would.
        var readers = [first, second]
        while Date() < deadline {
            readers.swapAt(0, 1)
            let page = try readers[0].zoneChanges(scope, zone: zone, syncToken: token, resultsLimit: 3, recordTypes: nil)
            for change in page.changes {
                switch change {
                case .changed(let record): state[record.recordName] = .some(record.changeTag)
                case .deleted(let name, _): state[name] = .some(nil)
                }
            }
            token = page.syncToken
            let notes = try readers[1].notifications(databaseID: channel.databaseID, after: cursor, limit: 5)
            delivered += notes.map(\.id)
            cursor = notes.last?.id ?? cursor
            if !page.moreComing && notes.isEmpty {
                if writersDone { break }
                writersDone = finished.wait(timeout: .now() + .milliseconds(2)) == .success
                if !writersDone { caughtUpWhileWriting += 1 }
            }
        }
        XCTAssertTrue(writersDone, "both writers finished")
        for writer in writers { XCTAssertNil(writer.failure, "a writer's operations all succeeded") }
        XCTAssertGreaterThan(caughtUpWhileWriting, 0, "the reader caught up mid-run, so its pages interleaved with commits")

        for name in names {
            let stored = try first.lookupRecords(scope, zone: zone, recordNames: [name]).first.flatMap { try? $0.get() }
            XCTAssertEqual(state[name] ?? nil, stored?.changeTag, "\(name): the feed's latest state is the store's")
        }
        let everything = try first.notifications(databaseID: channel.databaseID, after: channel.startCursor, limit: 100_000).map(\.id)
        XCTAssertEqual(delivered, everything, "the outbox read in small pages during the writes delivered every notification once, in order")
        XCTAssertGreaterThan(everything.count, 100)
    }
}
