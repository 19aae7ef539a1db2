import Foundation
import RecordClient
import RecordModel
@testable import SyncEngine
import XCTest

/// A tombstone that names who deleted: the deletion applied here carries the deleter (the watch
/// line names them), and the deleter is remembered among the book's writers so their name is
/// looked up like any writer's.
final class RemoteDeleterTests: TemporaryStoreTestCase {
    func testAnAppliedDeletionCarriesTheDeleterItsTombstoneNamed() throws {
        _ = try store.applyFetchedPage(try FirstSyncApplyTests.page(0..<2), tokenKey: SyncSettingKey.syncToken)
        let page = ZoneChangesPage(changes: [.deleted(recordName: "Person|~|0", recordType: "Person", deletedBy: "_carol"),
                                             .deleted(recordName: "Person|~|1", recordType: "Person")],
                                   syncToken: "t2", moreComing: false)
        let outcome = try store.applyFetchedPage(page, tokenKey: SyncSettingKey.syncToken)
        XCTAssertEqual(outcome.applied.map(\.recordName), ["Person|~|0", "Person|~|1"])
        XCTAssertEqual(outcome.applied.map(\.kind), [.deleted, .deleted])
        XCTAssertEqual(outcome.applied.map(\.deletedBy), ["_carol", nil], "a tombstone that names no one leaves the deleter unknown")
        XCTAssertNotNil(outcome.applied.first?.record, "the record as it was before its deletion")
        XCTAssertTrue(try store.writerUserRecordNames().contains("_carol"))
    }
}
