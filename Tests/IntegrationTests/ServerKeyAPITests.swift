import Foundation
import RecordModel
import XCTest

/// Server-to-server keys through the real binaries: `scorebookd key add`
/// registers a key made by `openssl ecparam`, and requests are signed by `openssl dgst` itself (an
/// implementation independent of ours) over `DATE:BASE64(SHA256(BODY)):SUBPATH`.
class ServerKeyAPITests: DaemonTestCase {
    static let directory = DaemonProcess.makeTemporaryDirectory(prefix: "server-keys")

    /// Runs openssl; its standard output.
    @discardableResult
    func openssl(_ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        guard DaemonProcess.waitForExit(process, timeout: 30), process.terminationStatus == 0 else {
            throw DaemonError("openssl \(arguments.joined(separator: " ")) failed")
        }
        return data
    }

    /// A new P-256 key file, as the README tells users to make one.
    func makeKey() throws -> URL {
        let file = Self.directory.appendingPathComponent("key-\(UUID().uuidString).pem")
        try openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", file.path])
        return file
    }

    func addKey(_ file: URL) throws -> String {
        let result = try DaemonProcess.run("scorebookd", ["key", "add", "--public-key", file.path, "--name", "importer"] + daemon.storeArguments)
        XCTAssertEqual(result.status, 0, result.stderr)
        let keyID = try XCTUnwrap(try JSONValue.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["keyID"]?.stringValue)
        XCTAssertEqual(keyID.count, 64)
        return keyID
    }

    /// openssl's DER ECDSA signature of `DATE:BASE64(SHA256(BODY)):SUBPATH`, base64.
    func sign(_ key: URL, date: String, body: [UInt8], subpath: String) throws -> String {
        let bodyHash = try openssl(["dgst", "-sha256", "-binary", try write(body)]).base64EncodedString()
        let message = Array("\(date):\(bodyHash):\(subpath)".utf8)
        return try openssl(["dgst", "-sha256", "-sign", key.path, try write(message)]).base64EncodedString()
    }

    func write(_ bytes: [UInt8]) throws -> String {
        let file = Self.directory.appendingPathComponent("data-\(UUID().uuidString)")
        try Data(bytes).write(to: file)
        return file.path
    }

    static func isoDate(_ date: Date) -> String { ISO8601DateFormatter().string(from: date) }

    /// Sends a request signed with `key` (or with the given signature), no other credentials.
    func signed(_ method: String, _ subpath: String, body: [UInt8], keyID: String, key: URL, date: Date = Date(),
                signature: String? = nil) throws -> (status: Int, body: JSONValue)
    {
        let dateText = Self.isoDate(date)
        let signatureText = try signature ?? sign(key, date: dateText, body: body, subpath: subpath)
        return try daemon.request(method, subpath, headers: [
            ("X-Apple-CloudKit-Request-KeyID", keyID), ("X-Apple-CloudKit-Request-ISO8601Date", dateText),
            ("X-Apple-CloudKit-Request-SignatureV1", signatureText),
        ], body: body).parsed()
    }

    func modifyBytes(_ operations: [(String, JSONValue)]) -> [UInt8] {
        Array(modifyBody(operations, zone: "_defaultZone").serializedString().utf8)
    }

    func game(_ name: String, _ title: String) -> JSONValue {
        record(name, "CatalogGame", ["name": ["value": .string(title)]])
    }

    func testOpenSSLSignedRequestsActOnThePublicDatabaseAsTheKeysUser() throws {
        let key = try makeKey()
        let keyID = try addKey(key)
        XCTAssertEqual(try addKey(key), keyID, "adding the same key again prints the same id")
        let alice = try makeUser("alice")
        let name = "game-\(UUID().uuidString.prefix(8))"
        let modifyPath = path("records/modify", database: "public")
        let created = try daemon.post(modifyPath, token: alice.token, json: String(decoding: modifyBytes([("create", game(name, "Catan"))]), as: UTF8.self))
        XCTAssertEqual(created.status, 200)

        // A key changes any public record (here alice's), as its own user.
        let updated = try signed("POST", modifyPath, body: modifyBytes([("forceUpdate", game(name, "Catan (curated)"))]), keyID: keyID, key: key)
        XCTAssertEqual(updated.status, 200, updated.body.serializedString())
        let saved = updated.body["records"]?.arrayValue?.first
        XCTAssertEqual(saved?["fields"]?["name"]?["value"]?.stringValue, "Catan (curated)")
        XCTAssertEqual(saved?["created"]?["userRecordName"]?.stringValue, alice.userRecordName)
        let keyUser = try XCTUnwrap(saved?["modified"]?["userRecordName"]?.stringValue)
        XCTAssertNotEqual(keyUser, alice.userRecordName)
        // A body-less GET signs the hash of the empty string.
        let zones = try signed("GET", path("zones/list", database: "public"), body: [], keyID: keyID, key: key)
        XCTAssertEqual(zones.status, 200, zones.body.serializedString())
        XCTAssertEqual(zones.body["zones"]?.arrayValue?.first?["zoneID"]?["zoneName"]?.stringValue, "_defaultZone")
        let deleted = try signed("POST", modifyPath, body: modifyBytes([("forceDelete", record(name))]), keyID: keyID, key: key)
        XCTAssertEqual(deleted.body["records"]?.arrayValue?.first?["deleted"]?.boolValue, true, deleted.body.serializedString())
    }

    func testUsersCurrentWithAServerKeyAnswersTheKeysOwnUser() throws {
        let key = try makeKey()
        let keyID = try addKey(key)
        let name = "game-\(UUID().uuidString.prefix(8))"
        let saved = try signed("POST", path("records/modify", database: "public"), body: modifyBytes([("create", game(name, "Go"))]),
                               keyID: keyID, key: key)
        let keyUser = try XCTUnwrap(saved.body["records"]?.arrayValue?.first?["created"]?["userRecordName"]?.stringValue, "\(saved.body)")
        // The key's user is named `key-…`; its record name, what the API answers, is an ordinary `_…` one.
        XCTAssertNotNil(keyUser.range(of: "^_[0-9a-f]{32}$", options: .regularExpression), keyUser)
        for operation in ["users/current", "users/caller"] {
            let current = try signed("GET", path(operation, database: "public"), body: [], keyID: keyID, key: key)
            XCTAssertEqual(current.status, 200, current.body.serializedString())
            XCTAssertEqual(current.body["userRecordName"]?.stringValue, keyUser, operation)
        }
        let forged = try signed("GET", path("users/current", database: "public"), body: [], keyID: keyID, key: key,
                                signature: Data(repeating: 1, count: 70).base64EncodedString())
        assertError(forged, 401, "AUTHENTICATION_FAILED", "a bad signature stays refused")
        let privately = try signed("GET", path("users/current"), body: [], keyID: keyID, key: key)
        assertError(privately, 401, "AUTHENTICATION_FAILED", "keys work on the public database only")
    }

    func testBadExpiredUnknownOrPrivateSignaturesAreRefused() throws {
        let key = try makeKey()
        let keyID = try addKey(key)
        let lookupPath = path("records/lookup", database: "public")
        let body = Array(#"{"records":[{"recordName":"nothing"}]}"#.utf8)
        XCTAssertEqual(try signed("POST", lookupPath, body: body, keyID: keyID, key: key).status, 200, "the control request verifies")

        assertError(try signed("POST", lookupPath, body: body, keyID: keyID, key: key, date: Date().addingTimeInterval(-11 * 60)),
                    401, "AUTHENTICATION_FAILED", "a replay older than 10 minutes")
        assertError(try signed("POST", lookupPath, body: body, keyID: keyID, key: key, date: Date().addingTimeInterval(11 * 60)),
                    401, "AUTHENTICATION_FAILED", "a date 11 minutes ahead")
        let date = Self.isoDate(Date())
        let otherBody = try sign(key, date: date, body: Array(#"{"records":[]}"#.utf8), subpath: lookupPath)
        assertError(try daemon.request("POST", lookupPath, headers: [
            ("X-Apple-CloudKit-Request-KeyID", keyID), ("X-Apple-CloudKit-Request-ISO8601Date", date),
            ("X-Apple-CloudKit-Request-SignatureV1", otherBody),
        ], body: body).parsed(), 401, "AUTHENTICATION_FAILED", "a signature of another body")
        assertError(try signed("POST", lookupPath, body: body, keyID: keyID, key: key, signature: "bm90IGEgc2lnbmF0dXJl"),
                    401, "AUTHENTICATION_FAILED", "a signature that is not DER")
        let strangerKey = try makeKey()
        assertError(try signed("POST", lookupPath, body: body, keyID: keyID, key: strangerKey), 401, "AUTHENTICATION_FAILED",
                    "signed by an unregistered key under a registered id")
        assertError(try signed("POST", lookupPath, body: body, keyID: String(repeating: "c", count: 64), key: key), 401,
                    "AUTHENTICATION_FAILED", "an unknown key id")
        let privatePath = path("records/lookup")
        assertError(try signed("POST", privatePath, body: body, keyID: keyID, key: key), 401, "AUTHENTICATION_FAILED",
                    "keys work on the public database only")
    }

    func testKeyAddRefusesAFileThatIsNotAP256Key() throws {
        let file = Self.directory.appendingPathComponent("not-a-key.pem")
        try Data("hello\n".utf8).write(to: file)
        let result = try DaemonProcess.run("scorebookd", ["key", "add", "--public-key", file.path] + daemon.storeArguments)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("P-256"), result.stderr)
        let missing = try DaemonProcess.run("scorebookd", ["key", "add", "--public-key", "/nonexistent/k.pem"] + daemon.storeArguments)
        XCTAssertNotEqual(missing.status, 0)
        XCTAssertTrue(missing.stderr.contains("/nonexistent/k.pem"), missing.stderr)
    }
}
