import Foundation
import RecordSync
import XCTest

// Plain `import RecordSync`: these tests use the library as an app does, public API only.

/// A shelf and its books: a book belongs to its shelf by a `DELETE_SELF` reference.
private struct Shelf: SyncedEntity {
    static let recordType = "Shelf"
    static let fieldNames = ["label", "modificationDate"]
    let recordName: String
    var modificationDate = Date()
    var label: String?

    init(label: String?) {
        recordName = Self.newRecordName()
        self.label = label
    }

    func record(in zone: ZoneID) -> Record { record(in: zone, fields: ["label": label.map(FieldValue.string)]) }

    init(record: Record) throws {
        let reader = try RecordReader(record, as: Shelf.self)
        recordName = record.recordName
        label = reader.string("label")
        modificationDate = reader.modificationDate
    }
}

private struct Volume: SyncedEntity {
    static let recordType = "Volume"
    static let fieldNames = ["shelf", "title", "modificationDate"]
    let recordName: String
    var modificationDate = Date()
    var shelf: String
    var title: String

    init(shelf: Shelf, title: String) {
        recordName = Self.newRecordName()
        self.shelf = shelf.recordName
        self.title = title
    }

    func record(in zone: ZoneID) -> Record {
        record(in: zone, fields: ["shelf": .deleteSelfReference(to: shelf), "title": .string(title)])
    }

    init(record: Record) throws {
        let reader = try RecordReader(record, as: Volume.self)
        recordName = record.recordName
        shelf = try reader.reference("shelf")
        title = reader.string("title") ?? ""
        modificationDate = reader.modificationDate
    }
}

final class SyncStoreOfflineTests: XCTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("recordsync-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    func openStore() throws -> SyncStore {
        try SyncStore(path: directory.appendingPathComponent("app.sqlite").path, zone: "Library",
                      entityTypes: [Shelf.self, Volume.self])
    }

    func testEditsAreDurableTypedAndQueuedWithoutAServer() throws {
        let shelf = Shelf(label: "Fiction")
        try openStore().save([shelf, Volume(shelf: shelf, title: "Dune"), Volume(shelf: shelf, title: "Emma")])
        // Another store object on the file, as after a restart.
        let reopened = try openStore()
        XCTAssertEqual(try reopened.all(Shelf.self).map(\.label), ["Fiction"])
        XCTAssertEqual(Set(try reopened.entities(Volume.self, referencing: shelf.recordName).map(\.title)), ["Dune", "Emma"])
        XCTAssertEqual(try reopened.pendingChangeCount(), 3)
        XCTAssertEqual(RecordNaming.recordType(fromRecordName: shelf.recordName), "Shelf")
    }

    func testDeletingAParentDeletesWhatReferencesItWithDeleteSelf() throws {
        let store = try openStore()
        let shelf = Shelf(label: "Fiction")
        let other = Shelf(label: "Poetry")
        try store.save([shelf, other, Volume(shelf: shelf, title: "Dune"), Volume(shelf: other, title: "Odes")])
        let deleted = try store.delete(shelf)
        XCTAssertEqual(deleted.count, 2)
        XCTAssertEqual(try store.all(Volume.self).map(\.title), ["Odes"])
    }

    func testAFieldLeftEmptyIsRemovedAndAFieldOfANewerVersionIsKept() throws {
        let store = try openStore()
        var shelf = Shelf(label: "Fiction")
        try store.save(shelf)
        // A newer version of the app wrote a field this one does not know.
        var newer = try XCTUnwrap(store.record(named: shelf.recordName))
        newer.fields["colour"] = .string("red")
        try store.save(RecordOnly(record: newer))
        shelf.label = nil
        try store.save(shelf)
        let record = try XCTUnwrap(store.record(named: shelf.recordName))
        XCTAssertNil(record.fields["label"])
        XCTAssertEqual(record.fields["colour"], .string("red"))
    }

    func testSyncWithoutAnAccountIsATypedError() async throws {
        let store = try openStore()
        do {
            try await store.sync()
            XCTFail("a sync without an account succeeded")
        } catch {
            XCTAssertEqual(error.kind, .notLoggedIn)
        }
    }

    func testAnotherZoneOfTheFileIsSeparate() throws {
        let store = try openStore()
        try store.save(Shelf(label: "Fiction"))
        let archive = try store.opening(zone: "Archive")
        XCTAssertEqual(try archive.all(Shelf.self).count, 0)
        XCTAssertEqual(Set(try store.zones().map(\.zone)).isSuperset(of: ["Library", "Archive"]), true)
    }
}

/// A record saved as it is (every field of it known), for writing what a newer version would.
private struct RecordOnly: SyncedEntity {
    static let recordType = "Shelf"
    static let fieldNames: [String] = []
    let stored: Record
    var recordName: String { stored.recordName }
    var modificationDate = Date()

    init(record: Record) { stored = record }
    func record(in zone: ZoneID) -> Record { stored }
}
