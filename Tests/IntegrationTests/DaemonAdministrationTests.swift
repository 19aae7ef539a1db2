import Foundation
import RecordModel
import SQLiteDB
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Issue 15: the real `scorebookd`'s administration commands — a data directory
/// without a store is refused, one `serve` per data directory, `check` on a damaged store,
/// `user revoke`, and JSON keys in a fixed order.
final class DaemonAdministrationTests: XCTestCase {
    func testEveryCommandButServeRefusesADataDirectoryWithoutAStore() throws {
        let parent = DaemonProcess.makeTemporaryDirectory(prefix: "scorebookd-nostore")
        defer { try? FileManager.default.removeItem(at: parent) }
        let missing = parent.appendingPathComponent("typo").path
        let empty = parent.appendingPathComponent("empty").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
        for directory in [missing, empty] {
            let commands: [[String]] = [
                ["user", "create", "ann"], ["user", "token", "ann"], ["user", "revoke", "ann"], ["user", "list"],
                ["user", "edit", "ann", "--email", "ann@example.com"], ["user", "delete", "ann", "--yes"],
                ["apitoken", "create"], ["backup", "--to", parent.appendingPathComponent("backup.sqlite").path], ["check"],
            ]
            for command in commands {
                let result = try DaemonProcess.run("scorebookd", command + ["--data-dir", directory])
                let label = (command + [directory]).joined(separator: " ")
                XCTAssertEqual(result.status, 1, "\(label): \(result.stderr)")
                assertOneLine(result.stderr, label)
                XCTAssertTrue(result.stderr.contains(directory), "the line names the path: \(result.stderr)")
                XCTAssertEqual(result.stdout, "", label)
            }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing), "nothing was created at the mistyped path")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: empty), [], "nothing was created in the empty directory")
        XCTAssertFalse(FileManager.default.fileExists(atPath: parent.appendingPathComponent("backup.sqlite").path), "no empty backup")

        // `serve` creates the store; then the same commands work.
        let daemon = try DaemonProcess.start(dataDirectory: URL(fileURLWithPath: missing))
        let created = try DaemonProcess.run("scorebookd", ["user", "create", "ann", "--data-dir", missing])
        XCTAssertEqual(created.status, 0, created.stderr)
        try daemon.stop()
    }

    func testASecondServeOnTheSameDataDirectoryIsRefusedNamingThePidThatHoldsIt() throws {
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "scorebookd-lock")
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try DaemonProcess.start(dataDirectory: directory)
        let second = try DaemonProcess.run("scorebookd", ["serve", "--data-dir", directory.path, "--port", "0"], timeout: 20)
        XCTAssertEqual(second.status, 1, second.stderr)
        assertOneLine(second.stderr, "second serve")
        XCTAssertTrue(second.stderr.contains("pid \(daemon.processIdentifier)"), second.stderr)
        XCTAssertFalse(second.stdout.contains("listening"), second.stdout)
        XCTAssertEqual(try daemon.get("/health", token: nil).status, 200, "the first daemon is unaffected")

        // Administration commands still work beside the serving daemon.
        let user = try DaemonProcess.run("scorebookd", ["user", "create", "ann", "--data-dir", directory.path])
        XCTAssertEqual(user.status, 0, user.stderr)

        // kill -9 leaves no lock behind: the kernel drops it with the process.
        daemon.kill()
        try daemon.restart()
        XCTAssertEqual(try daemon.get("/health", token: nil).status, 200)
        let third = try DaemonProcess.run("scorebookd", ["serve", "--data-dir", directory.path, "--port", "0"], timeout: 20)
        XCTAssertEqual(third.status, 1)
        XCTAssertTrue(third.stderr.contains("pid \(daemon.processIdentifier)"), "the restarted daemon holds it now: \(third.stderr)")
        try daemon.stop()
        // And a clean stop releases it too.
        try daemon.restart()
        try daemon.stop()
    }

    /// Issue 16: a data directory whose schema is newer than this scorebookd (written by a later
    /// version) is refused by `serve` and the other commands with one line, and left as it was.
    func testAStoreNewerThanTheBinaryIsRefusedWithOneLine() throws {
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "scorebookd-newer")
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try DaemonProcess.start(dataDirectory: directory)
        try daemon.stop()
        let file = directory.appendingPathComponent("scorebook.sqlite").path
        try SQLiteConnection(path: file).execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
        for command in [["serve", "--port", "0"], ["user", "list"]] {
            let result = try DaemonProcess.run("scorebookd", command + ["--data-dir", directory.path], timeout: 20)
            XCTAssertEqual(result.status, 1, "\(command): \(result.stderr)")
            assertOneLine(result.stderr, command.joined(separator: " "))
            XCTAssertTrue(result.stderr.contains("schema is version 999, newer than this scorebookd"), result.stderr)
            XCTAssertFalse(result.stdout.contains("listening"), result.stdout)
        }
        // `check` reports it in its JSON, as it does any store it cannot open.
        let check = try DaemonProcess.run("scorebookd", ["check", "--data-dir", directory.path], timeout: 20)
        XCTAssertEqual(check.status, 1, check.stderr)
        XCTAssertTrue(check.stdout.contains("\"ok\":false") && check.stdout.contains("newer than this scorebookd"), check.stdout)
        let version = try SQLiteConnection(path: file).first("SELECT value FROM meta WHERE key = 'schema_version'") { $0.text(0) }
        XCTAssertEqual(version, "999", "the refusal changed nothing")
    }

    func testCheckReportsADamagedStoreInItsJSONWithExitOne() throws {
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "scorebookd-check")
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try DaemonProcess.start(dataDirectory: directory)
        let token = try daemon.createUser("ann")
        var client = APIClient(daemon: daemon, token: token)
        client.environment = "development"
        _ = try client.ok("zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Z"]]]]])
        let records: [JSONValue] = (0..<200).map { index in
            ["operationType": "create", "record": ["recordName": .string("r\(index)"), "recordType": "Note",
                                                   "fields": ["text": ["value": .string(String(repeating: "x", count: 500))]]]]
        }
        _ = try client.ok("records/modify", ["zoneID": ["zoneName": "Z"], "operations": .array(records)])
        try daemon.stop()

        let healthy = try DaemonProcess.run("scorebookd", ["check", "--data-dir", directory.path])
        XCTAssertEqual(healthy.status, 0, healthy.stderr)
        XCTAssertEqual(healthy.stdout, "{\"ok\":true,\"problems\":[]}\n")

        let storeFile = directory.appendingPathComponent("scorebook.sqlite").path
        let original = try Data(contentsOf: URL(fileURLWithPath: storeFile))
        XCTAssertGreaterThan(original.count, 8 * 4096, "the store spans several pages")
        var damagedHeader = original
        damagedHeader.replaceSubrange(0..<100, with: Data(repeating: 0x5A, count: 100))
        var damagedPages = original
        let middle = (original.count / 4096 / 2) * 4096
        damagedPages.replaceSubrange(middle..<middle + 8 * 4096, with: Data((0..<8 * 4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) }))
        for (label, bytes) in [("header", damagedHeader), ("pages", damagedPages)] {
            let copy = DaemonProcess.makeTemporaryDirectory(prefix: "scorebookd-damaged")
            defer { try? FileManager.default.removeItem(at: copy) }
            try bytes.write(to: copy.appendingPathComponent("scorebook.sqlite"))
            let result = try DaemonProcess.run("scorebookd", ["check", "--data-dir", copy.path])
            XCTAssertEqual(result.status, 1, "\(label): \(result.stdout) \(result.stderr)")
            XCTAssertEqual(result.stderr, "", "\(label): the report is the JSON, not an error line")
            XCTAssertTrue(result.stdout.hasPrefix("{\"ok\":false,\"problems\":[\""), "\(label): \(result.stdout)")
            let report = try JSONValue.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            XCTAssertEqual(report["ok"], false)
            XCTAssertFalse(report["problems"]?.arrayValue?.isEmpty ?? true, "\(label): \(result.stdout)")
        }
    }

    /// A store where a book was ever shared used to fail its check: the share record is not in
    /// the query counts, on purpose.
    func testCheckPassesOnAStoreWithSharesAssetsPublicRecordsAndServerKeys() throws {
        try assertCheckPassesOnAPopulatedStore(try DaemonProcess.start())
    }

    func testUserRevokeRefusesOneTokenOrEveryTokenOfTheUserAtOnce() throws {
        let daemon = try DaemonProcess.start()
        let (recordName, first) = try daemon.createUserInfo("ann")
        let secondRun = try DaemonProcess.run("scorebookd", ["user", "token", "ann", "--data-dir", daemon.dataDirectory.path])
        let second = try XCTUnwrap(try JSONValue.parse(secondRun.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["token"]?.stringValue)
        let (_, bobsToken) = try daemon.createUserInfo("bob")
        func status(_ token: String) throws -> (Int, String?) {
            let answer = try APIClient(daemon: daemon, token: token).call("users/current", [:])
            return (answer.status, answer.body["serverErrorCode"]?.stringValue)
        }
        // Both tokens used, so the daemon has them cached.
        for _ in 0..<3 {
            XCTAssertEqual(try status(first).0, 200)
            XCTAssertEqual(try status(second).0, 200)
        }

        let revokeOne = try DaemonProcess.run("scorebookd", ["user", "revoke", "ann", "--token", first, "--data-dir", daemon.dataDirectory.path])
        XCTAssertEqual(revokeOne.status, 0, revokeOne.stderr)
        XCTAssertEqual(revokeOne.stdout, "{\"userRecordName\":\"\(recordName)\",\"name\":\"ann\",\"revoked\":1}\n")
        XCTAssertTrue(try status(first) == (401, "AUTHENTICATION_FAILED"), "the revoked token is refused at once")
        XCTAssertEqual(try status(second).0, 200, "the other token stays valid")
        XCTAssertEqual(try status(bobsToken).0, 200)

        let wrongOwner = try DaemonProcess.run("scorebookd", ["user", "revoke", "ann", "--token", bobsToken, "--data-dir", daemon.dataDirectory.path])
        XCTAssertEqual(wrongOwner.status, 1)
        assertOneLine(wrongOwner.stderr, "revoking another user's token")
        XCTAssertEqual(try status(bobsToken).0, 200, "bob's token is not ann's to revoke")
        let unknown = try DaemonProcess.run("scorebookd", ["user", "revoke", "nobody", "--data-dir", daemon.dataDirectory.path])
        XCTAssertEqual(unknown.status, 1)
        assertOneLine(unknown.stderr, "revoking an unknown user")

        let revokeAll = try DaemonProcess.run("scorebookd", ["user", "revoke", "ann", "--data-dir", daemon.dataDirectory.path])
        XCTAssertEqual(revokeAll.status, 0, revokeAll.stderr)
        XCTAssertEqual(try JSONValue.parse(revokeAll.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["revoked"], 1)
        XCTAssertTrue(try status(second) == (401, "AUTHENTICATION_FAILED"))
        XCTAssertTrue(try status(first) == (401, "AUTHENTICATION_FAILED"))
        XCTAssertEqual(try status(bobsToken).0, 200)

        // A new token works again; the CloudKit-style query parameters see the revocation too.
        let apiToken = try daemon.createAPIToken()
        let third = try daemon.createUserInfo("carol").token
        let query = "/database/1/\(DaemonTestCase.container)/development/private/users/current?ckAPIToken=\(apiToken)&ckWebAuthToken=\(third)"
        XCTAssertEqual(try daemon.post(query, token: nil, json: "{}").status, 200)
        XCTAssertEqual(try DaemonProcess.run("scorebookd", ["user", "revoke", "carol", "--data-dir", daemon.dataDirectory.path]).status, 0)
        XCTAssertEqual(try daemon.post(query, token: nil, json: "{}").status, 401)
        try daemon.stop()
    }

    /// Swift dictionaries iterate in a different order in every process, so several runs of
    /// each command would show any key order that is not fixed.
    func testJSONOutputKeepsItsKeysInAFixedOrder() throws {
        let daemon = try DaemonProcess.start()
        let directory = daemon.dataDirectory.path
        let created = try DaemonProcess.run("scorebookd", ["user", "create", "ann", "--data-dir", directory])
        XCTAssertNotNil(created.stdout.range(of: #"^\{"userRecordName":"_[0-9a-f]{32}","name":"ann","token":"[0-9a-f]{64}"\}\n$"#,
                                             options: .regularExpression), created.stdout)
        for _ in 0..<5 {
            let token = try DaemonProcess.run("scorebookd", ["user", "token", "ann", "--data-dir", directory])
            XCTAssertNotNil(token.stdout.range(of: #"^\{"userRecordName":"_[0-9a-f]{32}","name":"ann","token":"[0-9a-f]{64}"\}\n$"#,
                                               options: .regularExpression), token.stdout)
            let list = try DaemonProcess.run("scorebookd", ["user", "list", "--json", "--data-dir", directory])
            XCTAssertNotNil(list.stdout.range(of: #"^\[\{"userRecordName":"_[0-9a-f]{32}","name":"ann","email":null,"liveTokens":[0-9]+,"lastUsed":null\}\]\n$"#,
                                              options: .regularExpression), list.stdout)
            let check = try DaemonProcess.run("scorebookd", ["check", "--data-dir", directory])
            XCTAssertEqual(check.stdout, "{\"ok\":true,\"problems\":[]}\n")
        }
        let backup = daemon.dataDirectory.appendingPathComponent("copy.sqlite").path
        let backedUp = try DaemonProcess.run("scorebookd", ["backup", "--to", backup, "--data-dir", directory])
        XCTAssertEqual(backedUp.stdout, "{\"backup\":\"\(backup)\"}\n")
        try daemon.stop()
    }

}
