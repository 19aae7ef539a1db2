import Foundation
import RecordModel
import TestSupport
import XCTest

/// A large picture moves through `scorebook` without being held in memory whole: adding it,
/// uploading it and downloading it each keep the process's peak resident size well under the
/// picture's size (it is copied, hashed, sent and received in pieces of at most 4 MB).
final class CLIPictureMemoryTests: XCTestCase {
    var daemon: DaemonProcess!
    var scratch: URL!

    override func setUpWithError() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/time") else {
            throw XCTSkip("GNU time (/usr/bin/time) measures the CLI's peak memory")
        }
        daemon = try DaemonProcess.start()
        scratch = DaemonProcess.makeTemporaryDirectory(prefix: "picture-memory")
    }

    override func tearDownWithError() throws {
        try daemon?.stop()
        daemon = nil
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Runs `scorebook --store STORE ARGUMENTS…` under GNU time; its peak resident size in MB.
    func peakMegabytes(_ machine: CLIMachine, _ arguments: String...) throws -> Double {
        let report = scratch.appendingPathComponent("time-\(UUID().uuidString)").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/time")
        process.arguments = ["-f", "%M", "-o", report, DaemonProcess.binaryURL("scorebook").path, "--store", machine.storePath] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        XCTAssertTrue(DaemonProcess.waitForExit(process, timeout: 120), "scorebook \(arguments) finished")
        XCTAssertEqual(process.terminationStatus, 0, "scorebook \(arguments)")
        let text = try String(contentsOfFile: report, encoding: .utf8)
        let kilobytes = try XCTUnwrap(text.split(separator: "\n").last.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) })
        return kilobytes / 1024
    }

    func testA40MBPictureIsAddedUploadedAndDownloadedInPieces() throws {
        let alice = try daemon.createUserInfo("alice", email: "alice@example.com")
        let laptop = CLIMachine("laptop")
        try laptop.login(daemon, token: alice.token)
        let phone = CLIMachine("phone")
        try phone.login(daemon, token: alice.token)
        var generator = SplitMix64(seed: 40)
        var raw = [UInt64](repeating: 0, count: 40 * 1024 * 1024 / 8)
        for index in raw.indices { raw[index] = generator.next() }
        raw[0] = pngSignature.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }  // a PNG, as far as its first bytes go
        let bytes = raw.withUnsafeBytes { Data($0) }
        raw = []
        let path = scratch.appendingPathComponent("big.jpg").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: bytes))
        try laptop.run("person", "add", "Ann")
        let baseline = try peakMegabytes(laptop, "person", "list")

        let adding = try peakMegabytes(laptop, "person", "avatar", "Ann", path)
        let uploading = try peakMegabytes(laptop, "sync")
        let downloading = try peakMegabytes(phone, "sync")
        print("scorebook peak RSS: baseline \(baseline) MB, add \(adding) MB, upload \(uploading) MB, download \(downloading) MB")
        // Before pieces, the upload alone held three copies of the picture (over 120 MB).
        XCTAssertLessThan(adding - baseline, 16, "adding a 40 MB picture")
        XCTAssertLessThan(uploading - baseline, 24, "uploading a 40 MB picture")
        XCTAssertLessThan(downloading - baseline, 32, "downloading a 40 MB picture (4 MB ranges)")

        let copy = scratch.appendingPathComponent("phone.jpg").path
        try phone.run("person", "avatar", "Ann", "--save", copy)
        XCTAssertEqual(FileManager.default.contents(atPath: copy), bytes, "byte for byte on the other machine")
    }
}
