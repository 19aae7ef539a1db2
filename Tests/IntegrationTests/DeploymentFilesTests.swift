import Foundation
import XCTest

/// The systemd unit shipped in docs/deploy parses, with this build's scorebookd in its ExecStart,
/// and keeps the hardening the operations guide promises.
final class DeploymentFilesTests: XCTestCase {
    func testTheSystemdUnitVerifies() throws {
        let analyze = "/usr/bin/systemd-analyze"
        guard FileManager.default.isExecutableFile(atPath: analyze) else { throw XCTSkip("no systemd-analyze on this machine") }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let unit = try String(contentsOf: root.appendingPathComponent("docs/deploy/scorebookd.service"), encoding: .utf8)
        for directive in ["User=scorebookd", "StateDirectory=scorebookd", "ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
                          "ProtectHome=yes", "Restart=on-failure", "TimeoutStopSec=", "--trusted-proxy 127.0.0.1/32"] {
            XCTAssertTrue(unit.contains(directive), directive)
        }
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "unit")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("scorebookd.service")
        try unit.replacingOccurrences(of: "/usr/local/bin/scorebookd", with: DaemonProcess.binaryURL("scorebookd").path)
            .write(to: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: analyze)
        process.arguments = ["verify", file.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(DaemonProcess.waitForExit(process, timeout: 30))
        XCTAssertEqual(process.terminationStatus, 0, text)
        XCTAssertEqual(text.trimmingCharacters(in: .whitespacesAndNewlines), "", "no warning about the unit")
    }
}
