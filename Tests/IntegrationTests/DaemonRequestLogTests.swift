import Foundation
import RecordModel
import XCTest

/// Request log lines name the user and the client; `serve --trusted-proxy` decides whose
/// `X-Forwarded-For`, `-Proto` and `-Host` count — for the logged address and for the links the
/// daemon hands out (courier, share).
final class DaemonRequestLogTests: XCTestCase {
    static let forwarded: [(String, String)] = [
        ("X-Forwarded-For", "198.51.100.1, 203.0.113.7"), ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "scores.example.org"),
    ]

    func testEveryRequestLineNamesTheUserAndTheClientAndForwardedHeadersFromAnyoneAreIgnored() throws {
        let daemon = try DaemonProcess.start(extraArguments: ["--log-level", "debug"])
        let ann = try daemon.createUserInfo("ann")
        let (share, courier) = try links(daemon, token: ann.token, headers: Self.forwarded)
        XCTAssertTrue(share.hasPrefix("http://127.0.0.1:\(daemon.port)/share/"), share)
        XCTAssertTrue(courier.hasPrefix("http://127.0.0.1:\(daemon.port)/"), courier)

        let lines = logLines(daemon, containing: "operation=records/modify")
        XCTAssertFalse(lines.isEmpty, daemon.standardErrorText)
        for line in lines {
            XCTAssertTrue(line.contains("user=\(ann.userRecordName)"), line)
            XCTAssertTrue(line.contains("client=127.0.0.1"), line)
        }
        XCTAssertFalse(daemon.standardErrorText.contains("203.0.113.7"), "a client cannot choose the address it is logged as")
        // A request that names no user says so.
        XCTAssertEqual(try daemon.post("/database/1/\(DaemonTestCase.container)/development/private/zones/list", token: nil, json: "{}").status, 421)
        let anonymous = logLines(daemon, containing: "status=421")
        XCTAssertTrue(anonymous.first?.contains("user=-") ?? false, "\(anonymous)")
        XCTAssertTrue(anonymous.first?.contains("client=127.0.0.1") ?? false, "\(anonymous)")
        try daemon.stop()
    }

    func testForwardedHeadersCountFromATrustedProxy() throws {
        try assertForwardedHeadersCountFromATrustedProxy(try DaemonProcess.start(extraArguments: DaemonRequestLogTests.behindAProxy))
    }

    static let behindAProxy = ["--log-level", "debug", "--trusted-proxy", "::1/128", "--trusted-proxy", "127.0.0.0/8"]

    func testATrustedProxyThatIsNoAddressRangeIsRefusedInOneLine() throws {
        for bad in ["10.0.0.0/33", "example.org", "::1/129", "10.0.0.0/x"] {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bad-proxy-\(UUID().uuidString)").path
            let result = try DaemonProcess.run("scorebookd", ["serve", "--port", "0", "--trusted-proxy", bad, "--data-dir", directory])
            XCTAssertNotEqual(result.status, 0, bad)
            assertOneLine(result.stderr, bad)
            XCTAssertTrue(result.stderr.contains(bad), result.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: directory), "refused before anything was made")
        }
    }
}

extension XCTestCase {
    /// Behind a trusted proxy (`daemon` trusts loopback), the forwarded client address is logged
    /// and the links follow the forwarded scheme and host; without the headers, nothing changes.
    func assertForwardedHeadersCountFromATrustedProxy(_ daemon: DaemonProcess) throws {
        let ann = try daemon.createUserInfo("ann")
        let (share, courier) = try links(daemon, token: ann.token, headers: DaemonRequestLogTests.forwarded)
        XCTAssertTrue(share.hasPrefix("https://scores.example.org/share/"), share)
        XCTAssertTrue(courier.hasPrefix("https://scores.example.org/"), courier)
        let lines = logLines(daemon, containing: "operation=records/modify")
        XCTAssertTrue(lines.first?.contains("client=203.0.113.7") ?? false, "the last address no trusted proxy holds: \(lines)")
        XCTAssertTrue(lines.first?.contains("user=\(ann.userRecordName)") ?? false, "\(lines)")

        // Without forwarded headers the proxy's own address is the client.
        let plain = try links(daemon, token: ann.token, headers: [])
        XCTAssertTrue(plain.share.hasPrefix("http://127.0.0.1:\(daemon.port)/share/"), plain.share)
        try daemon.stop()
    }

    /// The daemon's request lines on standard error that mention `needle` (waits, bounded, for
    /// the line to be written).
    func logLines(_ daemon: DaemonProcess, containing needle: String) -> [String] {
        for _ in 0..<100 {
            let lines = daemon.standardErrorText.split(separator: "\n").map(String.init).filter { $0.contains(needle) }
            if !lines.isEmpty { return lines }
            usleep(20_000)
        }
        return []
    }

    /// The share link and the courier URL `token`'s caller gets, sending `headers`.
    func links(_ daemon: DaemonProcess, token: String, headers: [(String, String)]) throws -> (share: String, courier: String) {
        let base = "/database/1/\(DaemonTestCase.container)/development"
        let zone = "Z\(UUID().uuidString.prefix(8))"
        let create: JSONValue = ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(zone)]]]]]
        XCTAssertEqual(try daemon.request("POST", "\(base)/private/zones/modify", token: token, headers: headers,
                                          body: Array(create.serializedString().utf8)).status, 200)
        let share: JSONValue = [
            "zoneID": ["zoneName": .string(zone)],
            "operations": [["operationType": "create", "record": [
                "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "fields": ["cloudkit.title": ["value": "Friday"]],
                "publicPermission": "NONE", "participants": [],
            ]]],
        ]
        let saved = try daemon.request("POST", "\(base)/private/records/modify", token: token, headers: headers,
                                       body: Array(share.serializedString().utf8)).parsed()
        let courier = try daemon.request("POST", "\(base)/tokens/create", token: token, headers: headers,
                                         body: Array(#"{"apnsEnvironment": "development"}"#.utf8)).parsed()
        return (saved.body["records"]?.arrayValue?.first?["url"]?.stringValue ?? "", courier.body["webcourierURL"]?.stringValue ?? "")
    }
}
