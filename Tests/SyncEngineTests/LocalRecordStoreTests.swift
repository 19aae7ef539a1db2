import Foundation
import RecordModel
@testable import SyncEngine
import XCTest

final class LocalRecordStoreTests: TemporaryStoreTestCase {

    func owned(_ name: String, by owner: String?, type: String = "T") -> Record {
        var fields: [String: FieldValue] = ["n": .string(name)]
        if let owner { fields["owner"] = .reference(Reference(recordName: owner, action: .deleteSelf)) }
        return Record(recordName: name, recordType: type, fields: fields)
    }

    func testAnEditAndItsOutboxEntryCommitTogetherOrNotAtAll() throws {
        try store.edit { try $0.save(owned("a", by: nil)) }
        XCTAssertEqual(try store.pendingChangeCount(), 1)
        struct Interrupted: Error {}
        XCTAssertThrowsError(try store.edit { editor in
            try editor.save(owned("b", by: nil))
            throw Interrupted()
        })
        XCTAssertNil(try store.record(named: "b"))
        XCTAssertEqual(try store.pendingChangeCount(), 1)
        // A second process opening the same file sees the same state.
        let reopened = try LocalRecordStore(path: path)
        XCTAssertEqual(try reopened.record(named: "a")?.fields["n"], .string("a"))
        XCTAssertEqual(try reopened.sendableChanges().map(\.recordName), ["a"])
    }

    func testRepeatedEditsOfOneRecordAreOneOutboxEntry() throws {
        for value in ["1", "2", "3"] {
            var record = owned("a", by: nil)
            record.fields["n"] = .string(value)
            try store.edit { try $0.save(record) }
        }
        let changes = try store.sendableChanges()
        XCTAssertEqual(changes.count, 1)
        XCTAssertEqual(try store.record(named: "a")?.fields["n"], .string("3"))
    }

    func testFieldsThisVersionDoesNotKnowSurviveALocalEdit() throws {
        var fromServer = owned("a", by: nil)
        fromServer.fields["future"] = .string("kept")
        _ = try store.mergeServerRecord(fromServer)
        var edit = Record(recordName: "a", recordType: "T", fields: ["n": .string("changed")])
        edit.removedFieldNames = ["gone"]
        try store.edit { try $0.save(edit) }
        XCTAssertEqual(try store.record(named: "a")?.fields["future"], .string("kept"))
        XCTAssertEqual(try store.record(named: "a")?.fields["n"], .string("changed"))
    }

    func testARecordTypeNeverChanges() throws {
        try store.edit { try $0.save(owned("a", by: nil, type: "Game")) }
        XCTAssertThrowsError(try store.edit { try $0.save(owned("a", by: nil, type: "Match")) })
    }

    func testDeletingCascadesAlongDeleteSelfReferencesAndQueuesOnlyWhatTheServerMayHold() throws {
        try store.edit { editor in
            try editor.save(owned("game", by: nil))
            try editor.save(owned("match", by: "game"))
            try editor.save(owned("player", by: "match"))
            try editor.save(owned("other", by: nil))
        }
        // Nothing was ever sent: the deletion leaves nothing to send.
        let deleted = try store.edit { try $0.delete(recordNamed: "game") }
        XCTAssertEqual(deleted.map(\.recordName), ["game", "match", "player"])
        XCTAssertEqual(try store.sendableChanges().map(\.recordName), ["other"])

        // Once on the server, deleting the root queues one deletion; the server cascades.
        try store.edit { editor in
            try editor.save(owned("game2", by: nil))
            try editor.save(owned("match2", by: "game2"))
        }
        for name in ["game2", "match2"] {
            let change = try store.sendableChanges().first { $0.recordName == name }!
            try store.acknowledgeSave(change, sent: try store.record(named: name)!, saved: owned(name, by: nil))
        }
        try store.edit { _ = try $0.delete(recordNamed: "game2") }
        let queued = try store.sendableChanges().filter { $0.recordName != "other" }
        XCTAssertEqual(queued.map(\.recordName), ["game2"])
        XCTAssertEqual(queued.first?.operation, .delete)
    }

    func testAnAcknowledgementDoesNotSwallowAnEditMadeWhileTheRequestWasInFlight() throws {
        try store.edit { try $0.save(owned("a", by: nil)) }
        let inFlight = try store.sendableChanges()[0]
        var edited = owned("a", by: nil)
        edited.fields["n"] = .string("edited meanwhile")
        try store.edit { try $0.save(edited) }
        var saved = owned("a", by: nil)
        saved.recordChangeTag = "t1"
        try store.acknowledgeSave(inFlight, sent: owned("a", by: nil), saved: saved)
        XCTAssertEqual(try store.sendableChanges().map(\.recordName), ["a"])
        XCTAssertEqual(try store.serverCopy(named: "a")?.recordChangeTag, "t1")
    }

    func testDeleteAllDataEmptiesTheStore() throws {
        try store.edit { try $0.save(owned("a", by: nil)) }
        try store.setSetting("k", "v")
        try store.deleteAllData()
        XCTAssertFalse(try store.hasLocalData())
        XCTAssertNil(try store.setting("k"))
    }
}
