import Foundation
import XCTest

/// Only pictures (PNG, JPEG, GIF, WebP, HEIC, told by their first bytes) are avatars and match
/// photos, and saving a picture does not replace a file without `--force`, through the real
/// `scorebook` binary.
final class CLIPictureKindTests: XCTestCase {
    var machine: CLIMachine!
    var match = ""

    override func setUpWithError() throws {
        machine = CLIMachine("kinds")
        match = try machine.startMatch(of: "Go", between: ["Ann"])
    }

    override func tearDown() { machine = nil }

    /// A file in the machine's folder holding `header` and then 100 bytes.
    func file(_ name: String, _ header: [UInt8]) -> String {
        let path = machine.directory.appendingPathComponent(name).path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(header + (0..<100).map { UInt8($0) })))
        return path
    }

    func testEachPictureFormatIsTakenAndAnythingElseRefused() throws {
        let pictures: [String: [UInt8]] = [
            "a.png": pngSignature, "a.jpg": [0xFF, 0xD8, 0xFF, 0xE0], "a.gif": Array("GIF89a".utf8),
            "a.webp": Array("RIFF".utf8) + [0x10, 0, 0, 0] + Array("WEBP".utf8),
            "a.heic": [0, 0, 0, 0x18] + Array("ftypheic".utf8),
        ]
        for (name, header) in pictures.sorted(by: { $0.key < $1.key }) {
            try machine.run("person", "avatar", "Ann", file(name, header))
            try machine.run("match", "photo", "add", match, file(name, header))
        }
        let notPictures = [file("notes.jpg", Array("hello, this is text".utf8)), file("movie.png", [0, 0, 0, 0x18] + Array("ftypisom".utf8))]
        for path in notPictures {
            for arguments in [["person", "avatar", "Ann", path], ["match", "photo", "add", match, path]] {
                let message = try machine.refused(arguments)
                XCTAssertTrue(message.contains("\(path) is not a picture"), message)
            }
        }
        XCTAssertEqual(try machine.json("match", "photos", match).arrayValue?.count, pictures.count)
    }

    func testSavingAPictureDoesNotReplaceAFileWithoutForce() throws {
        let picture = file("ann.png", pngSignature)
        try machine.run("person", "avatar", "Ann", picture)
        let photo = try machine.create("match", "photo", "add", match, picture)
        let existing = machine.directory.appendingPathComponent("keep.txt").path
        let kept = Data("mine".utf8)
        XCTAssertTrue(FileManager.default.createFile(atPath: existing, contents: kept))
        for arguments in [["person", "avatar", "Ann", "--save", existing], ["match", "photo", "save", photo, "--to", existing]] {
            XCTAssertTrue(try machine.refused(arguments).contains("\(existing) already exists; add --force"))
            XCTAssertEqual(FileManager.default.contents(atPath: existing), kept)
        }
        try machine.run("person", "avatar", "Ann", "--save", existing, "--force")
        XCTAssertEqual(FileManager.default.contents(atPath: existing), FileManager.default.contents(atPath: picture))
        try FileManager.default.removeItem(atPath: existing)
        try machine.run("match", "photo", "save", photo, "--to", existing)
        try machine.run("match", "photo", "save", photo, "--to", existing, "--force")
        XCTAssertEqual(FileManager.default.contents(atPath: existing), FileManager.default.contents(atPath: picture))
        XCTAssertTrue(try machine.run("match", "photo", "save", "--help").stdout.contains("--force"))
    }
}
