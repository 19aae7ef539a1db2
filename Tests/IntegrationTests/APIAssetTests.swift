import Foundation
import Glibc
import RecordModel
import TestSupport
import XCTest

/// Assets over HTTP against the real daemon: upload URLs, receipts, attaching,
/// download URLs with ETag and Range, and every kind of bad input. `PostgresAPIAssetTests` runs
/// the same bodies on a daemon serving PostgreSQL.
class APIAssetTests: DaemonTestCase {
    let zone = "Pictures"

    func uniqueName(_ prefix: String) -> String { "\(prefix)|~|\(UUID().uuidString)" }

    func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// The path of an absolute URL the daemon handed out (it names the daemon's own address).
    func pathOf(_ url: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let parsed = try XCTUnwrap(URLComponents(string: url), url, file: file, line: line)
        XCTAssertEqual(parsed.port, try daemon.port, "URLs name the daemon's address", file: file, line: line)
        return parsed.percentEncodedPath
    }

    /// One upload URL for (record, field).
    func uploadURL(_ token: String, record: String, field: String = "avatar", zone: String? = nil, database: String = "private",
                   zoneID: JSONValue? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> String
    {
        let body: JSONValue = [
            "zoneID": zoneID ?? ["zoneName": .string(zone ?? self.zone)],
            "tokens": [["recordName": .string(record), "recordType": "Person", "fieldName": .string(field)]],
        ]
        let answer = try daemon.post(path("assets/upload", database: database), token: token, json: body.serializedString())
        XCTAssertEqual(answer.status, 200, answer.body.serializedString(), file: file, line: line)
        let entry = try XCTUnwrap(answer.body["tokens"]?.arrayValue?.first, file: file, line: line)
        XCTAssertEqual(entry["recordName"]?.stringValue, record, file: file, line: line)
        XCTAssertEqual(entry["fieldName"]?.stringValue, field, file: file, line: line)
        return try XCTUnwrap(entry["url"]?.stringValue, file: file, line: line)
    }

    func put(_ url: String, _ bytes: [UInt8]) throws -> (status: Int, body: JSONValue) {
        try daemon.request("POST", try pathOf(url), headers: [("Content-Type", "application/octet-stream")], body: bytes).parsed()
    }

    /// Uploads `bytes` for (record, field) and returns the `singleFile` dictionary.
    func upload(_ token: String, _ bytes: [UInt8], record: String, field: String = "avatar", database: String = "private",
                zoneID: JSONValue? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue
    {
        let url = try uploadURL(token, record: record, field: field, database: database, zoneID: zoneID, file: file, line: line)
        let answer = try put(url, bytes)
        XCTAssertEqual(answer.status, 200, answer.body.serializedString(), file: file, line: line)
        return try XCTUnwrap(answer.body["singleFile"], file: file, line: line)
    }

    func person(_ name: String, avatar: JSONValue) -> JSONValue {
        record(name, "Person", ["firstName": ["value": "Ada"], "avatar": ["type": "ASSETID", "value": avatar]])
    }

    func download(_ url: String, headers: [(String, String)] = []) throws -> HTTPAnswer {
        try daemon.request("GET", try pathOf(url), headers: headers, timeout: 60)
    }

    func testAnUploadedAssetIsAttachedAndDownloadedByteForByte() throws {
        let alice = try makeUser("alice").token
        try createZone(zone, alice)
        let bytes = randomBytes(700_000, seed: 11)
        let name = uniqueName("Person")
        let singleFile = try upload(alice, bytes, record: name)
        let checksum = Data(SHA256Hasher.digest(bytes)).base64EncodedString()
        XCTAssertEqual(singleFile["fileChecksum"]?.stringValue, checksum, "fileChecksum is the base64 SHA-256 of the bytes")
        XCTAssertEqual(singleFile["size"]?.int64Value, 700_000)
        XCTAssertNotNil(singleFile["receipt"]?.stringValue)
        XCTAssertNotNil(singleFile["referenceChecksum"])
        XCTAssertNotNil(singleFile["wrappingKey"])

        let saved = try XCTUnwrap(modify(alice, [("create", person(name, avatar: singleFile))], zone: zone).first)
        let value = try XCTUnwrap(saved["fields"]?["avatar"]?["value"], saved.serializedString())
        XCTAssertEqual(saved["fields"]?["avatar"]?["type"], "ASSETID")
        XCTAssertEqual(value["fileChecksum"]?.stringValue, checksum)
        XCTAssertEqual(value["size"]?.int64Value, 700_000)
        XCTAssertNil(value["receipt"], "a receipt is never handed back")

        // Every read carries a download URL: lookup, query and the change feed.
        let looked = try XCTUnwrap(lookup(alice, name, zone: zone))
        let url = try XCTUnwrap(looked["fields"]?["avatar"]?["value"]?["downloadURL"]?.stringValue)
        let queried = try ok("records/query", alice, ["zoneID": ["zoneName": .string(zone)], "query": ["recordType": "Person"]])
        XCTAssertNotNil(queried["records"]?.arrayValue?.first?["fields"]?["avatar"]?["value"]?["downloadURL"]?.stringValue)
        let changes = try fetchChanges(alice, zone: zone)
        XCTAssertNotNil(changes.state[name]??["fields"]?["avatar"]?["value"]?["downloadURL"]?.stringValue)
        // So does the answer to an update that does not name the asset (written on the store's
        // thread, with the request's links handed to it: the task-local is not there).
        let updated = try XCTUnwrap(modify(alice, [("forceUpdate", record(name, "Person", ["firstName": ["value": "Grace"]]))], zone: zone).first)
        XCTAssertEqual(updated["fields"]?["firstName"]?["value"], "Grace", updated.serializedString())
        XCTAssertNotNil(updated["fields"]?["avatar"]?["value"]?["downloadURL"]?.stringValue, updated.serializedString())

        // The URL needs no credentials; the bytes, ETag and length are exact.
        let whole = try download(url)
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual(whole.body, bytes)
        XCTAssertEqual(whole.headers["content-length"], "700000")
        XCTAssertEqual(whole.headers["accept-ranges"], "bytes")
        let etag = try XCTUnwrap(whole.headers["etag"])

        // Range resumes; a cached copy is confirmed; a range past the end is refused.
        let rest = try download(url, headers: [("Range", "bytes=500000-")])
        XCTAssertEqual(rest.status, 206)
        XCTAssertEqual(rest.body, Array(bytes[500_000...]))
        XCTAssertEqual(rest.headers["content-range"], "bytes 500000-699999/700000")
        let middle = try download(url, headers: [("Range", "bytes=10-19")])
        XCTAssertEqual(middle.body, Array(bytes[10...19]))
        XCTAssertEqual(try download(url, headers: [("If-None-Match", etag)]).status, 304)
        let beyond = try download(url, headers: [("Range", "bytes=700000-")])
        XCTAssertEqual(beyond.status, 416)
        XCTAssertEqual(beyond.headers["content-range"], "bytes */700000")
    }

    func testIdenticalBytesAreStoredOnceAndAttachWithoutAReceiptForTheirUploader() throws {
        let alice = try makeUser("alice").token
        try createZone(zone, alice)
        let bytes = randomBytes(50_000, seed: 12)
        let first = uniqueName("Person"), second = uniqueName("Person")
        let firstFile = try upload(alice, bytes, record: first)
        let secondFile = try upload(alice, bytes, record: second)
        XCTAssertEqual(firstFile["fileChecksum"], secondFile["fileChecksum"])
        try modify(alice, [("create", person(first, avatar: firstFile)), ("create", person(second, avatar: secondFile))], zone: zone)
        if try daemon.postgresURL == nil {
            let scopes = try FileManager.default.contentsOfDirectory(atPath: try daemon.dataDirectory.appendingPathComponent("assets").path)
                .filter { $0 != "incoming" }
            let hex = SHA256Hasher.hex(SHA256Hasher.digest(bytes))
            var files = 0
            for scope in scopes {
                files += try FileManager.default.contentsOfDirectory(
                    atPath: try daemon.dataDirectory.appendingPathComponent("assets/\(scope)").path).filter { $0 == hex }.count
            }
            XCTAssertEqual(files, 1, "identical bytes in one database are stored once")
        }
        // The uploader may attach the same bytes elsewhere by checksum (an edited record re-sent
        // whole, a retry after a lost answer) without uploading again.
        let third = uniqueName("Person")
        let byChecksum: JSONValue = ["fileChecksum": firstFile["fileChecksum"]!, "size": firstFile["size"]!]
        let saved = try XCTUnwrap(modify(alice, [("create", person(third, avatar: byChecksum))], zone: zone).first)
        XCTAssertNil(saved["serverErrorCode"], saved.serializedString())
        let url = try XCTUnwrap(saved["fields"]?["avatar"]?["value"]?["downloadURL"]?.stringValue)
        XCTAssertEqual(try download(url).body, bytes)
    }

    func testReceiptsThatAreForgedReusedOrForeignAreRefused() throws {
        let alice = try makeUser("alice").token, bob = try makeUser("bob").token
        try createZone(zone, alice)
        try createZone(zone, bob)
        let name = uniqueName("Person")
        let file = try upload(alice, randomBytes(10_000, seed: 13), record: name)

        func refusal(_ token: String, _ record: JSONValue, atomic: Bool? = nil) throws -> [JSONValue] {
            try ok("records/modify", token, modifyBody([("create", record)], zone: zone, atomic: atomic))["records"]?.arrayValue ?? []
        }
        func assertBadRequest(_ entries: [JSONValue], _ message: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertEqual(entries.first?["serverErrorCode"], "BAD_REQUEST", "\(message): \(entries)", file: file, line: line)
        }
        let forged = file.setting("receipt", "00112233445566778899aabbccddeeff0011223344556677")
        assertBadRequest(try refusal(alice, person(name, avatar: forged)), "a forged receipt")
        assertBadRequest(try refusal(alice, person(uniqueName("Person"), avatar: file)), "a receipt for another record")
        assertBadRequest(try refusal(bob, person(name, avatar: file)), "another user's receipt")
        let wrongField = person(name, avatar: file).setting("fields", ["photo": ["type": "ASSETID", "value": file]])
        assertBadRequest(try refusal(alice, wrongField), "a receipt for another field")
        // Bytes the caller never uploaded cannot be attached by naming their checksum.
        assertBadRequest(try refusal(bob, person(uniqueName("Person"), avatar: ["fileChecksum": file["fileChecksum"]!, "size": 10_000])),
                         "a checksum of another user's bytes")
        assertBadRequest(try refusal(alice, person(uniqueName("Person"), avatar: ["size": 3])), "an asset without receipt or checksum")
        // A forged receipt whose type and key are spelled as JSON escapes is still checked: the
        // server skips the asset scan only for a body that cannot name an asset.
        let escaped = #"{"zoneID":{"zoneName":"\#(zone)"},"operations":[{"operationType":"create","record":{"recordName":"\#(uniqueName("Person"))","#
            + #""recordType":"Person","fields":{"avatar":{"type":"\u0041SSETID","value":{"\u0072eceipt":"00112233445566778899aabbccddeeff0011223344556677"}}}}}]}"#
        let escapedAnswer = try daemon.post(path("records/modify"), token: alice, json: escaped)
        XCTAssertEqual(escapedAnswer.status, 200, escapedAnswer.body.serializedString())
        assertBadRequest(escapedAnswer.body["records"]?.arrayValue ?? [], "a forged receipt spelled with escapes")

        // An atomic batch with one bad asset saves nothing.
        let atomic = try ok("records/modify", alice, modifyBody([
            ("create", record(uniqueName("Game"), "Game", ["name": ["value": "Go"]])), ("create", person(uniqueName("Person"), avatar: forged)),
        ], zone: zone, atomic: true))["records"]?.arrayValue ?? []
        XCTAssertEqual(atomic.map { $0["serverErrorCode"]?.stringValue }, ["ATOMIC_ERROR", "BAD_REQUEST"], "in the request's order")

        // A non-atomic one saves the rest and answers in the request's order, the refusal where it stood.
        let (firstGame, lastGame) = (uniqueName("Game"), uniqueName("Game"))
        let mixed = try ok("records/modify", alice, modifyBody([
            ("create", record(firstGame, "Game", ["name": ["value": "Go"]])), ("create", person(uniqueName("Person"), avatar: forged)),
            ("create", record(lastGame, "Game", ["name": ["value": "Hex"]])),
        ], zone: zone, atomic: false))["records"]?.arrayValue ?? []
        XCTAssertEqual(mixed.map { $0["serverErrorCode"]?.stringValue ?? $0["recordName"]?.stringValue }, [firstGame, "BAD_REQUEST", lastGame],
                       mixed.description)

        // The right receipt attaches once; the same receipt again is refused.
        XCTAssertNil(try refusal(alice, person(name, avatar: file)).first?["serverErrorCode"])
        let current = try XCTUnwrap(lookup(alice, name, zone: zone))
        let again = person(name, avatar: file).setting("recordChangeTag", current["recordChangeTag"] ?? .null)
        let reused = try ok("records/modify", alice, modifyBody([("update", again)], zone: zone))["records"]?.arrayValue ?? []
        assertBadRequest(reused, "a receipt used twice")
    }

    func testBadUploadsKeepNothing() throws {
        let alice = try makeUser("alice").token
        try createZone(zone, alice)
        let name = uniqueName("Person")

        // An upload URL takes one upload.
        let url = try uploadURL(alice, record: name)
        XCTAssertEqual(try put(url, [1, 2, 3]).status, 200)
        assertError(try put(url, [1, 2, 3]), 400, "BAD_REQUEST", "an upload URL used twice")
        assertError(try put("http://127.0.0.1:\(try daemon.port)/assets/1/upload/0123456789abcdef", [1]), 400, "BAD_REQUEST", "a made-up URL")
        assertError(try put(try uploadURL(alice, record: name), []), 400, "BAD_REQUEST", "an empty upload")

        // More than 50 MB: refused as declared, and refused as streamed (chunked, no length).
        let declaredHead = "POST \(try pathOf(try uploadURL(alice, record: name))) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 60000000\r\n\r\n"
        let declared = try RawHTTP.parse(try RawHTTP.sendBytes(port: try daemon.port, Array(declaredHead.utf8), timeout: 20)).parsed()
        assertError(declared, 413, "LIMIT_EXCEEDED", "a declared 60 MB upload")
        let oversize = try RawHTTP.parse(try RawHTTP.sendBytes(port: try daemon.port, chunkedUpload(
            path: try pathOf(try uploadURL(alice, record: name)), total: 50 * 1024 * 1024 + 1), timeout: 60))
        assertError(try oversize.parsed(), 413, "LIMIT_EXCEEDED", "a streamed upload past 50 MB")

        // A connection dropped half-way leaves nothing attachable, and the URL stays spent.
        let truncatedURL = try uploadURL(alice, record: name)
        let fd = try RawHTTP.connectLoopback(port: try daemon.port, sendTimeout: 10, receiveTimeout: 10)
        let head = "POST \(try pathOf(truncatedURL)) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n"
        let partial = Array(head.utf8) + randomBytes(100_000, seed: 14)
        _ = partial.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        close(fd)
        Thread.sleep(forTimeInterval: 0.5)
        assertError(try put(truncatedURL, [1]), 400, "BAD_REQUEST", "the URL of a truncated upload")
        if try daemon.postgresURL == nil {
            let incoming = try daemon.dataDirectory.appendingPathComponent("assets/incoming").path
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: incoming), [], "no staged bytes remain")
        }
        XCTAssertTrue(try daemon.isRunning)
    }

    /// `POST path` with `Transfer-Encoding: chunked` and `total` bytes in 1 MB chunks.
    func chunkedUpload(path: String, total: Int) -> [UInt8] {
        var out = Array("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".utf8)
        let chunk = [UInt8](repeating: 7, count: 1 << 20)
        var left = total
        while left > 0 {
            let count = min(left, chunk.count)
            out += Array((String(count, radix: 16) + "\r\n").utf8) + chunk[0..<count] + Array("\r\n".utf8)
            left -= count
        }
        return out + Array("0\r\n\r\n".utf8)
    }

    func testDownloadURLsCannotBeGuessedOrOutliveTheirRecord() throws {
        let alice = try makeUser("alice").token
        try createZone(zone, alice)
        let name = uniqueName("Person")
        let bytes = randomBytes(20_000, seed: 15)
        let saved = try XCTUnwrap(modify(alice, [("create", person(name, avatar: try upload(alice, bytes, record: name)))], zone: zone).first)
        let url = try XCTUnwrap(saved["fields"]?["avatar"]?["value"]?["downloadURL"]?.stringValue)
        XCTAssertEqual(try download(url).status, 200)

        // Any change to the token breaks its signature.
        var tampered = Array(url.utf8)
        let position = tampered.count - 10
        tampered[position] = tampered[position] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        assertError(try download(String(decoding: tampered, as: UTF8.self)).parsed(), 404, "NOT_FOUND", "a tampered download URL")
        assertError(try download("http://127.0.0.1:\(try daemon.port)/assets/1/download/x.y").parsed(), 404, "NOT_FOUND", "a made-up URL")

        // Replacing the avatar retires the old URL; deleting the record retires the new one.
        let replacement = try upload(alice, randomBytes(5_000, seed: 16), record: name)
        let updated = person(name, avatar: replacement).setting("recordChangeTag", saved["recordChangeTag"] ?? .null)
        let second = try XCTUnwrap(modify(alice, [("update", updated)], zone: zone).first)
        assertError(try download(url).parsed(), 404, "NOT_FOUND", "the URL of a replaced asset")
        let newURL = try XCTUnwrap(second["fields"]?["avatar"]?["value"]?["downloadURL"]?.stringValue)
        XCTAssertEqual(try download(newURL).status, 200)
        try modify(alice, [("forceDelete", record(name))], zone: zone)
        assertError(try download(newURL).parsed(), 404, "NOT_FOUND", "the URL of a deleted record's asset")
    }

    func testAssetsOfASharedBookAreReadByParticipantsOnly() throws {
        let owner = try daemon.createUserInfo("owner-\(UUID().uuidString.prefix(8).lowercased())", email: nil)
        let friend = try makeUser("friend"), viewer = try makeUser("viewer")
        try createZone(zone, owner.token)
        func participant(_ user: (userRecordName: String, token: String), _ permission: String) -> JSONValue {
            ["type": "USER", "permission": .string(permission), "acceptanceStatus": "INVITED",
             "userIdentity": ["lookupInfo": ["userRecordName": .string(user.userRecordName)]]]
        }
        let share: JSONValue = [
            "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "publicPermission": "NONE",
            "participants": [participant(friend, "READ_WRITE"), participant(viewer, "READ_ONLY")],
        ]
        let savedShare = try XCTUnwrap(modify(owner.token, [("create", share)], zone: zone).first)
        let guid = try XCTUnwrap(savedShare["shortGUID"]?.stringValue, savedShare.serializedString())
        for user in [friend, viewer] {
            XCTAssertEqual(try daemon.post(path("records/accept", database: "public"), token: user.token,
                                           json: (["shortGUIDs": [["value": .string(guid)]]] as JSONValue).serializedString()).status, 200)
        }

        // The participant uploads into the owner's zone and attaches through the shared database.
        let zoneID: JSONValue = ["zoneName": .string(zone), "ownerRecordName": .string(owner.userRecordName)]
        let name = uniqueName("Person")
        // A read-only participant may not upload (the first half of a write).
        assertError(try daemon.post(path("assets/upload", database: "shared"), token: viewer.token, json: (
            ["zoneID": zoneID, "tokens": [["recordName": .string(name), "fieldName": "avatar"]]] as JSONValue).serializedString()),
                    403, "ACCESS_DENIED")
        let bytes = randomBytes(30_000, seed: 17)
        let file = try upload(friend.token, bytes, record: name, database: "shared", zoneID: zoneID)
        let body: JSONValue = ["zoneID": zoneID, "operations": [["operationType": "create", "record": person(name, avatar: file)]]]
        let saved = try daemon.post(path("records/modify", database: "shared"), token: friend.token, json: body.serializedString())
        XCTAssertEqual(saved.status, 200)
        XCTAssertNil(saved.body["records"]?.arrayValue?.first?["serverErrorCode"], saved.body.serializedString())

        // The owner reads it from the private database; both download the same bytes.
        let ownersURL = try XCTUnwrap(lookup(owner.token, name, zone: zone)?["fields"]?["avatar"]?["value"]?["downloadURL"]?.stringValue)
        XCTAssertEqual(try download(ownersURL).body, bytes)
        let friendsLookup = try daemon.post(path("records/lookup", database: "shared"), token: friend.token,
                                            json: (["zoneID": zoneID, "records": [["recordName": .string(name)]]] as JSONValue).serializedString())
        let friendsURL = try XCTUnwrap(friendsLookup.body["records"]?.arrayValue?.first?["fields"]?["avatar"]?["value"]?["downloadURL"]?.stringValue)
        XCTAssertEqual(try download(friendsURL).body, bytes)

        // Once the owner unshares, the participant's URL stops working; the owner's does not.
        let currentShare = try XCTUnwrap(lookup(owner.token, "cloudkit.zoneshare", zone: zone))
        let deletion = record("cloudkit.zoneshare").setting("recordChangeTag", currentShare["recordChangeTag"] ?? .null)
        try modify(owner.token, [("delete", deletion)], zone: zone)
        assertError(try download(friendsURL).parsed(), 404, "NOT_FOUND", "a removed participant's URL")
        XCTAssertEqual(try download(ownersURL).status, 200)
    }

    func testPublicAssetsAreReadWithAnAPITokenAlone() throws {
        let writer = try makeUser("writer").token
        let apiToken = try daemon.createAPIToken()
        let name = uniqueName("CatalogGame")
        let bytes = randomBytes(8_000, seed: 18)
        let zoneID: JSONValue = ["zoneName": "_defaultZone"]
        let file = try upload(writer, bytes, record: name, field: "cover", database: "public", zoneID: zoneID)
        let body: JSONValue = ["zoneID": zoneID, "operations": [["operationType": "create", "record": record(name, "CatalogCover", [
            "cover": ["type": "ASSETID", "value": file],
        ])]]]
        let saved = try daemon.post(path("records/modify", database: "public"), token: writer, json: body.serializedString())
        XCTAssertNil(saved.body["records"]?.arrayValue?.first?["serverErrorCode"], saved.body.serializedString())
        let read = try daemon.post(path("records/lookup", database: "public") + "?ckAPIToken=\(apiToken)", token: nil,
                                   json: (["zoneID": zoneID, "records": [["recordName": .string(name)]]] as JSONValue).serializedString())
        let url = try XCTUnwrap(read.body["records"]?.arrayValue?.first?["fields"]?["cover"]?["value"]?["downloadURL"]?.stringValue,
                                read.body.serializedString())
        XCTAssertEqual(try download(url).body, bytes)
        // Anonymous readers cannot upload.
        let anonymous = try daemon.post(path("assets/upload", database: "public") + "?ckAPIToken=\(apiToken)", token: nil, json: (
            ["zoneID": zoneID, "tokens": [["recordName": .string(name), "fieldName": "cover"]]] as JSONValue).serializedString())
        assertError(anonymous, 421, "AUTHENTICATION_REQUIRED")
    }

    func testTheBuiltInSchemaTakesAvatarsInProduction() throws {
        let alice = try makeUser("alice").token
        _ = try ok("zones/modify", alice, ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(zone)]]]]],
                   environment: "production")
        let name = uniqueName("Person")
        let request: JSONValue = ["zoneID": ["zoneName": .string(zone)], "tokens": [["recordName": .string(name), "fieldName": "avatar"]]]
        let tokens = try ok("assets/upload", alice, request, environment: "production")
        let url = try XCTUnwrap(tokens["tokens"]?.arrayValue?.first?["url"]?.stringValue)
        let file = try XCTUnwrap(try put(url, randomBytes(2_000, seed: 19)).body["singleFile"])
        // Untyped, as a CloudKit client may send it: the schema says ASSET.
        let untyped = record(name, "Person", ["firstName": ["value": "Ada"], "avatar": ["value": file]])
        let saved = try ok("records/modify", alice, modifyBody([("create", untyped)], zone: zone), environment: "production")
        XCTAssertEqual(saved["records"]?.arrayValue?.first?["fields"]?["avatar"]?["type"], "ASSETID", saved.serializedString())
    }

    /// `scorebookd migrate` carries the assets' bytes into PostgreSQL with their records.
    func testMigrateCarriesTheAssetsToPostgreSQL() throws {
        guard try daemon.postgresURL == nil else { throw XCTSkip("migrates from SQLite") }
        if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
        let old = try DaemonProcess.start()
        let alice = try old.createUser("alice")
        XCTAssertEqual(try old.post(path("zones/modify"), token: alice, json: (["operations": [["operationType": "create", "zone": [
            "zoneID": ["zoneName": .string(zone)]]]]] as JSONValue).serializedString()).status, 200)
        let name = uniqueName("Person")
        let bytes = randomBytes(AssetTestSizes.overOneChunk, seed: 20)
        let tokens = try old.post(path("assets/upload"), token: alice, json: ([
            "zoneID": ["zoneName": .string(zone)], "tokens": [["recordName": .string(name), "fieldName": "avatar"]]] as JSONValue).serializedString())
        let url = try XCTUnwrap(tokens.body["tokens"]?.arrayValue?.first?["url"]?.stringValue)
        let file = try XCTUnwrap(try old.request("POST", try XCTUnwrap(URLComponents(string: url)?.percentEncodedPath), body: bytes)
            .parsed().body["singleFile"])
        XCTAssertEqual(try old.post(path("records/modify"), token: alice, json: modifyBody([("create", person(name, avatar: file))], zone: zone)
            .serializedString()).status, 200)
        try old.stop()

        let databaseURL = try PostgresTestCluster.shared().createDatabase()
        let migrated = try DaemonProcess.run("scorebookd", ["migrate", "--from-data-dir", old.dataDirectory.path, "--database", databaseURL])
        XCTAssertEqual(migrated.status, 0, migrated.stderr)
        let serving = try DaemonProcess.start(postgresURL: databaseURL)
        defer { XCTAssertNoThrow(try serving.stop()) }
        let looked = try serving.post(path("records/lookup"), token: alice, json: (["zoneID": ["zoneName": .string(zone)],
                                                                                   "records": [["recordName": .string(name)]]] as JSONValue).serializedString())
        let downloadURL = try XCTUnwrap(looked.body["records"]?.arrayValue?.first?["fields"]?["avatar"]?["value"]?["downloadURL"]?.stringValue)
        let answer = try serving.request("GET", try XCTUnwrap(URLComponents(string: downloadURL)?.percentEncodedPath))
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual(answer.body, bytes)
    }
}

enum AssetTestSizes {
    /// More than one of PostgreSQL's 1 MB chunks.
    static let overOneChunk = 1_500_000
}

final class PostgresAPIAssetTests: APIAssetTests {
    private static let postgres = PostgresDaemonForClass()

    override var daemon: DaemonProcess {
        get throws { try Self.postgres.daemon() }
    }

    override class func tearDown() {
        postgres.stop()
        super.tearDown()
    }

    func testTheStoreIsPostgreSQL() throws {
        XCTAssertEqual(try daemon.storeArguments.first, "--database")
    }
}

extension JSONValue {
    /// The object with `key` set to `value`.
    func setting(_ key: String, _ value: JSONValue) -> JSONValue {
        guard case .object(var members) = self else { return self }
        members[key] = value
        return .object(members)
    }
}
