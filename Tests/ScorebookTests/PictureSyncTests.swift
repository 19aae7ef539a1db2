import Foundation
import RecordClient
import RecordModel
@testable import Scorebook
@testable import SyncEngine
import XCTest

/// Pictures through the sync engine against the server double: uploaded once per book, before
/// the record; uploaded again when the server no longer holds the bytes a record goes without a
/// receipt for (it drops bytes no record refers to), instead of the change being parked.
final class PictureSyncTests: XCTestCase {
    func testAPictureIsUploadedOnceAndAgainOnlyWhenTheServerNoLongerHoldsIt() async throws {
        let machine = try TestMachine(server: MemoryCloudDatabase(), clock: TestClock())
        let book = machine.book
        let picture = machine.directory.appendingPathComponent("ann.jpg").path
        XCTAssertTrue(FileManager.default.createFile(atPath: picture, contents: pngSignature + Data((8..<70_000).map { UInt8(truncatingIfNeeded: $0 * 13) })))
        try book.addPerson(firstName: "Ann")
        try book.addPerson(firstName: "Bob")
        try book.addPerson(firstName: "Cy")
        try book.setAvatar(personReference: "Ann", file: picture)
        var summary = try await machine.sync()
        XCTAssertEqual(machine.database.uploads.count, 1)
        XCTAssertEqual(summary.picturesUploaded, 1)

        // The same picture for Bob: the server holds it already, so the record goes without a receipt.
        try book.setAvatar(personReference: "Bob", file: picture)
        summary = try await machine.sync()
        XCTAssertEqual(machine.database.uploads.count, 1, "an uploaded picture is not uploaded again")
        XCTAssertEqual(summary.picturesUploaded, 0)

        // The server dropped the bytes meanwhile: Cy's save is refused once, and the picture goes up again.
        machine.database.heldPictures.removeAll()
        let cy = try book.setAvatar(personReference: "Cy", file: picture)
        summary = try await machine.sync()
        XCTAssertEqual(machine.database.uploads.count, 2)
        XCTAssertEqual(summary.picturesUploaded, 1)
        XCTAssertEqual(try book.store.parkedChanges(), [:])
        XCTAssertEqual(try book.store.sendableChanges().count, 0)
        guard case .saved(let onServer)? = try await machine.database.server.lookupRecords(zoneID: Scorebook.zoneID, recordNames: [cy.recordName]).first
        else { return XCTFail("Cy is not on the server") }
        XCTAssertEqual(PictureReference(onServer.fields["avatar"]), cy.avatarPicture)
    }

    func testADamagedPictureIsRefusedAndRemovedSoThatSyncFetchesItAgain() throws {
        let machine = try TestMachine(server: MemoryCloudDatabase(), clock: TestClock())
        let file = machine.directory.appendingPathComponent("ann.jpg").path
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: pngSignature + Data(repeating: 7, count: 992)))
        try machine.book.addPerson(firstName: "Ann")
        let ann = try machine.book.setAvatar(personReference: "Ann", file: file)
        let picture = try XCTUnwrap(ann.avatarPicture)
        let stored = machine.book.pictureFiles.path(of: picture.checksum)
        XCTAssertTrue(FileManager.default.createFile(atPath: stored, contents: Data(repeating: 8, count: 1000)))  // same size, other bytes
        let out = machine.directory.appendingPathComponent("out.jpg").path
        XCTAssertThrowsError(try machine.book.saveAvatar(personReference: "Ann", to: out)) { error in
            XCTAssertTrue("\(error)".contains("damaged"), "\(error)")
        }
        XCTAssertFalse(machine.book.hasPicture(picture), "the damaged copy is gone, so sync downloads the picture again")
        XCTAssertFalse(FileManager.default.fileExists(atPath: out))
    }
}

/// The first bytes of a PNG file: only pictures are taken as avatars and photos.
let pngSignature = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
