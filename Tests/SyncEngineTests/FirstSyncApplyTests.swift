import Foundation
import RecordClient
import RecordModel
import SQLiteDB
@testable import SyncEngine
import XCTest

/// What makes a new machine's first sync fast, each kept to what it must do: fetched records
/// stored as the server wrote them, writers remembered as they arrive, the log checkpointed off
/// the writing thread, and pages read ahead.
final class FirstSyncApplyTests: TemporaryStoreTestCase {
    /// A Person as the server writes it in the feed, written by `creator` and last changed by `modifier`.
    static func serverJSON(_ index: Int, creator: String = "_alice", modifier: String = "_bob") -> String {
        #"{"recordName":"Person|~|\#(index)","recordType":"Person","recordChangeTag":"t\#(index)","#
            + #""fields":{"firstName":{"value":"Ada \#(index)","type":"STRING"},"modificationDate":{"value":\#(1000 + index),"type":"TIMESTAMP"}},"#
            + #""created":{"timestamp":5,"userRecordName":"\#(creator)"},"modified":{"timestamp":6,"userRecordName":"\#(modifier)"}}"#
    }

    static func page(_ indexes: Range<Int>, creator: String = "_alice", token: String = "t") throws -> ZoneChangesPage {
        var page = ZoneChangesPage(changes: [], syncToken: token, moreComing: false)
        for index in indexes {
            let json = serverJSON(index, creator: creator)
            page.changes.append(.saved(try Record(responseJSON: JSONValue.parse(json))))
            page.serverJSON["Person|~|\(index)"] = Array(json.utf8)
        }
        return page
    }

    func storedServerCopy(_ name: String) throws -> [UInt8]? {
        try store.withConnection { try $0.first("SELECT record FROM server_copies WHERE name = ?", [.text(name)]) { $0.blob(0) } }
    }

    func testANewRecordKeepsTheFetchedBytesAsItsServerCopyAndTheirFieldsAsItsOwn() throws {
        let page = try Self.page(0..<3)
        _ = try store.applyFetchedPage(page, tokenKey: SyncSettingKey.syncToken)
        XCTAssertEqual(try storedServerCopy("Person|~|1"), Array(Self.serverJSON(1).utf8))
        guard case .saved(let fetched) = page.changes[1] else { return XCTFail("a saved record") }
        XCTAssertEqual(try store.record(named: "Person|~|1")?.fields, fetched.fields)
        XCTAssertEqual(try store.serverCopy(named: "Person|~|1"), fetched)

        // A record known here still goes through the merge, and its copy is written from the merged record.
        var changed = page
        changed.serverJSON = [:]
        let newer = Self.serverJSON(1, modifier: "_carol").replacingOccurrences(of: #""t1""#, with: #""t1b""#)
        changed.changes = [.saved(try Record(responseJSON: JSONValue.parse(newer)))]
        _ = try store.applyFetchedPage(changed, tokenKey: SyncSettingKey.syncToken)
        XCTAssertEqual(try store.serverCopy(named: "Person|~|1")?.modified?.userRecordName, "_carol")
    }

    func testTheWritersAreRememberedAsServerCopiesArriveAndForgottenWithTheBook() throws {
        _ = try store.applyFetchedPage(try Self.page(0..<2), tokenKey: SyncSettingKey.syncToken)
        _ = try store.applyFetchedPage(try Self.page(2..<3, creator: "_dave"), tokenKey: SyncSettingKey.syncToken)
        XCTAssertEqual(try store.writerUserRecordNames(), ["_alice", "_bob", "_dave"])
        let other = try store.opening(LocalBook(scope: .private, zoneName: "Other", ownerRecordName: ""))
        XCTAssertEqual(try other.writerUserRecordNames(), [], "another book's writers are its own")
        try store.forgetBook()
        XCTAssertEqual(try store.writerUserRecordNames(), [])
    }

    func testAStoreOfTheEarlierSchemaFindsItsWritersInItsServerCopies() throws {
        _ = try store.applyFetchedPage(try Self.page(0..<2, creator: "_erin"), tokenKey: SyncSettingKey.syncToken)
        store = nil
        let connection = try SQLiteConnection(path: path)
        try connection.execute("DROP TABLE server_writers; PRAGMA user_version = 2")
        store = try LocalRecordStore(path: path)
        XCTAssertEqual(try store.writerUserRecordNames(), ["_erin", "_bob"])
    }

    func testPagesAppliedForAFetchAreCheckpointedIntoTheDatabaseFileOffTheWritingThread() throws {
        let before = try fileSize(path)
        // About 150 KB of log: SQLite's own checkpoint would wait for 4 MB.
        _ = try store.withRefetchableDurability { try store.applyFetchedPage(try Self.page(0..<400), tokenKey: SyncSettingKey.syncToken) }
        store.checkpointer?.wait()
        XCTAssertGreaterThan(try fileSize(path), before, "the pages reached the database file")
        let autocheckpoint = try store.withConnection { try $0.scalarInt("PRAGMA wal_autocheckpoint") }
        XCTAssertEqual(autocheckpoint, 1000, "SQLite checkpoints local edits itself again")
        XCTAssertEqual(try store.recordCount(), 400)
    }

    func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}
