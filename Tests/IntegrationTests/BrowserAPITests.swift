import Foundation
import RecordModel
import XCTest

/// What a web app's browser sends, through the real daemon: CORS preflights and headers for the
/// `--allow-origin` pages only, CloudKit JS's `ckSession`, and the CloudKit shapes its library
/// reads (`numbersAsStrings`, zone dictionaries, per-zone limits, acceptance values).
final class BrowserAPITests: DaemonTestCase {
    static let appOrigin = "http://app.example:8000"
    override class var daemonArguments: [String] { ["--allow-origin", appOrigin, "--allow-origin", "https://other.example"] }

    func preflight(_ target: String, origin: String) throws -> HTTPAnswer {
        try daemon.request("OPTIONS", target, headers: [
            ("Origin", origin), ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "content-type"),
        ])
    }

    func assertCORSHeaders(_ answer: HTTPAnswer, origin: String, _ context: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(answer.headers["access-control-allow-origin"], origin, context, file: file, line: line)
        let allowed = (answer.headers["access-control-allow-headers"] ?? "").lowercased()
        for header in ["content-type", "authorization", "x-apple-cloudkit-request-keyid", "x-apple-cloudkit-request-signaturev1"] {
            XCTAssertTrue(allowed.contains(header), "\(context): \(header) in \(allowed)", file: file, line: line)
        }
        XCTAssertEqual(answer.headers["access-control-expose-headers"], "X-Apple-CloudKit-Web-Auth-Token", context, file: file, line: line)
        XCTAssertEqual(answer.headers["vary"], "Origin", context, file: file, line: line)
    }

    func testPreflightsAndCORSHeadersGoToAllowedOriginsOnly() throws {
        let (_, token) = try makeUser("cors")
        let apiToken = try daemon.createAPIToken()
        let query = "?ckAPIToken=\(apiToken)&ckSession=\(token)"
        let created = try daemon.post("/database/1/\(Self.container)/development/tokens/create", token: token, json: "{}")
        let courier = try XCTUnwrap(URL(string: created.body["webcourierURL"]?.stringValue ?? ""), "\(created.body)")
        let upload = try ok("assets/upload", token, ["tokens": [["recordName": "r", "recordType": "Picture", "fieldName": "image"]]])
        let uploadURL = try XCTUnwrap(URL(string: upload["tokens"]?.arrayValue?.first?["url"]?.stringValue ?? ""), "\(upload)")
        let targets = [path("records/query") + query, "/device/1/\(Self.container)/development/tokens/create" + query,
                       courier.path, uploadURL.path + (uploadURL.query.map { "?\($0)" } ?? "")]
        for target in targets {
            // The preflight needs no credentials and answers for an allowed origin.
            let allowed = try preflight(target, origin: Self.appOrigin)
            XCTAssertTrue((200..<300).contains(allowed.status), "\(target): \(allowed.status) \(allowed.text)")
            assertCORSHeaders(allowed, origin: Self.appOrigin, target)
            XCTAssertTrue(allowed.headers["access-control-allow-methods"]?.contains("POST") ?? false, target)
            // An origin not on the list gets no CORS headers, so the browser blocks its page.
            let refused = try preflight(target, origin: "http://evil.example")
            XCTAssertNil(refused.headers["access-control-allow-origin"], target)
            XCTAssertFalse((200..<300).contains(refused.status), "\(target): \(refused.status)")
        }
        // Real requests carry the headers too, for the allowed origin only.
        let body = Array(#"{"query": {"recordType": "Game"}}"#.utf8)
        let answered = try daemon.request("POST", path("records/query") + query, headers: [("Origin", "https://other.example")], body: body)
        XCTAssertEqual(answered.status, 200, answered.text)
        assertCORSHeaders(answered, origin: "https://other.example", "records/query")
        XCTAssertEqual(answered.headers["x-apple-cloudkit-web-auth-token"], token)
        let polled = try daemon.request("GET", courier.path + "?timeout=0", headers: [("Origin", Self.appOrigin)])
        XCTAssertEqual(polled.status, 200, polled.text)
        assertCORSHeaders(polled, origin: Self.appOrigin, "the courier, polled bare")
        let foreign = try daemon.request("POST", path("records/query") + query, headers: [("Origin", "http://evil.example")], body: body)
        XCTAssertEqual(foreign.status, 200, "nothing else changes for the request itself")
        XCTAssertNil(foreign.headers["access-control-allow-origin"])
        let plain = try daemon.request("POST", path("records/query") + query, body: body)
        XCTAssertNil(plain.headers["access-control-allow-origin"], "no Origin, no CORS headers")
        XCTAssertNil(plain.headers["vary"])
    }

    func testAnyOriginOnlyWhenSpelledOut() throws {
        let wildcard = try DaemonProcess.run("scorebookd", ["serve", "--port", "0", "--allow-origin", "*"] + daemon.storeArguments)
        XCTAssertNotEqual(wildcard.status, 0)
        XCTAssertTrue(wildcard.stderr.contains("--allow-any-origin"), wildcard.stderr)
        let notAnOrigin = try DaemonProcess.run("scorebookd", ["serve", "--port", "0", "--allow-origin", "app.example/path"] + daemon.storeArguments)
        XCTAssertNotEqual(notAnOrigin.status, 0)
        XCTAssertTrue(notAnOrigin.stderr.contains("--allow-origin"), notAnOrigin.stderr)

        let any = try DaemonProcess.start(extraArguments: ["--allow-any-origin"])
        defer { XCTAssertNoThrow(try any.stop()) }
        let answer = try any.request("OPTIONS", "/database/1/\(Self.container)/development/private/records/query",
                                     headers: [("Origin", "http://anywhere.example:1234")])
        XCTAssertEqual(answer.headers["access-control-allow-origin"], "http://anywhere.example:1234", answer.text)
    }

    func testCkSessionIsReadAsTheWebAuthToken() throws {
        let (recordName, token) = try makeUser("session")
        let apiToken = try daemon.createAPIToken()
        let current = try daemon.request("GET", path("users/current") + "?ckAPIToken=\(apiToken)&ckSession=\(token)")
        XCTAssertEqual(current.status, 200, current.text)
        XCTAssertEqual(try current.parsed().body["userRecordName"]?.stringValue, recordName)
        XCTAssertEqual(current.headers["x-apple-cloudkit-web-auth-token"], token, "answered with the token to use next")
        let saved = try daemon.request("POST", path("records/modify") + "?ckAPIToken=\(apiToken)&ckSession=\(token)",
                                       body: Array(modifyBody([("create", record("s1", "Thing"))], zone: nil).serializedString().utf8))
        XCTAssertEqual(saved.status, 200, saved.text)
        let publicRead = try daemon.request("POST", path("records/query", database: "public") + "?ckAPIToken=\(apiToken)&ckSession=\(token)",
                                            body: Array(#"{"query": {"recordType": "Thing"}}"#.utf8))
        XCTAssertEqual(publicRead.headers["x-apple-cloudkit-web-auth-token"], token, publicRead.text)
        let unknown = try daemon.request("GET", path("users/current") + "?ckAPIToken=\(apiToken)&ckSession=nope")
        XCTAssertEqual(unknown.status, 401, unknown.text)
    }

    /// CloudKit JS 1.x sends `ckSession=null` on every request before sign-in (and after sign-out):
    /// no session, so public reads answer, what needs a user asks for one with the sign-in page,
    /// and the courier is served as the capability it is.
    func testAnEmptyNullOrUndefinedSessionIsNoSession() throws {
        let (_, token) = try makeUser("nosession")
        let apiToken = try daemon.createAPIToken()
        let created = try daemon.post("/database/1/\(Self.container)/development/tokens/create", token: token, json: "{}")
        let courier = try XCTUnwrap(URL(string: created.body["webcourierURL"]?.stringValue ?? "")?.path, "\(created.body)")
        let library = "ckjsBuildVersion=15GDev53&ckjsVersion=1.2.0"
        for absent in ["ckSession=null", "ckSession=undefined", "ckSession=", "ckWebAuthToken=null", "ckWebAuthToken=&ckSession=null"] {
            let query = "?\(library)&\(absent)&ckAPIToken=\(apiToken)"
            let current = try daemon.request("GET", path("users/current", database: "public") + query, headers: [("Origin", Self.appOrigin)])
            XCTAssertEqual(current.status, 421, "\(absent): \(current.text)")
            let refusal = try current.parsed().body
            XCTAssertEqual(refusal["serverErrorCode"], "AUTHENTICATION_REQUIRED", absent)
            XCTAssertTrue(refusal["redirectURL"]?.stringValue?.contains("/signin?container=\(Self.container)") ?? false,
                          "\(absent): the sign-in page, where CloudKit JS sends the person: \(refusal)")
            XCTAssertNil(current.headers["x-apple-cloudkit-web-auth-token"], absent)
            let publicRead = try daemon.request("POST", path("records/query", database: "public") + query,
                                                body: Array(#"{"query": {"recordType": "Thing"}}"#.utf8))
            XCTAssertEqual(publicRead.status, 200, "\(absent): the API token alone reads the public database: \(publicRead.text)")
            let privateRead = try daemon.request("POST", path("records/query") + query, body: Array(#"{"query": {"recordType": "Thing"}}"#.utf8))
            XCTAssertEqual(privateRead.status, 421, "\(absent): \(privateRead.text)")
            let polled = try daemon.request("GET", courier + query.replacingOccurrences(of: "?", with: "?timeout=0&"))
            XCTAssertEqual(polled.status, 200, "\(absent): the courier is its own credential: \(polled.text)")
        }
        // A session that names a token is still checked.
        let unknown = try daemon.request("GET", path("users/current", database: "public") + "?ckAPIToken=\(apiToken)&ckSession=nullish")
        XCTAssertEqual(unknown.status, 401, unknown.text)
    }

    func testNumbersAsStringsAnswersNumberFieldsAsStrings() throws {
        let (_, token) = try makeUser("numbers")
        try createZone("ScorebookData", token)
        let fields: JSONValue = ["score": ["value": 9_007_199_254_740_993, "type": "INT64"], "ratio": ["value": 1.5, "type": "DOUBLE"],
                                 "name": ["value": "Ann", "type": "STRING"]]
        func assertStrings(_ record: JSONValue?, _ context: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertEqual(record?["fields"]?["score"]?["value"], "9007199254740993", "\(context): \(record?.serializedString() ?? "nil")", file: file, line: line)
            XCTAssertEqual(record?["fields"]?["ratio"]?["value"], "1.5", context, file: file, line: line)
            XCTAssertEqual(record?["fields"]?["name"]?["value"], "Ann", context, file: file, line: line)
        }
        let modify: JSONValue = ["zoneID": ["zoneName": "ScorebookData"], "numbersAsStrings": true,
                                 "operations": [["operationType": "create", "record": ["recordName": "n1", "recordType": "Score", "fields": fields]]]]
        assertStrings(try ok("records/modify", token, modify)["records"]?.arrayValue?.first, "modify")
        let zone: JSONValue = ["zoneName": "ScorebookData"]
        assertStrings(try ok("records/lookup", token, ["zoneID": zone, "records": [["recordName": "n1"]], "numbersAsStrings": true])["records"]?
            .arrayValue?.first, "lookup")
        assertStrings(try ok("records/query", token, ["zoneID": zone, "query": ["recordType": "Score"], "numbersAsStrings": true])["records"]?
            .arrayValue?.first, "query")
        assertStrings(try ok("records/changes", token, ["zoneID": zone, "numbersAsStrings": true])["records"]?.arrayValue?.first, "changes")
        assertStrings(try ok("changes/zone", token, ["zones": [["zoneID": zone]], "numbersAsStrings": true])["zones"]?.arrayValue?.first?["records"]?
            .arrayValue?.first, "changes/zone")
        let plain = try ok("records/lookup", token, ["zoneID": zone, "records": [["recordName": "n1"]]])["records"]?.arrayValue?.first
        XCTAssertEqual(plain?["fields"]?["score"]?["value"], .int(9_007_199_254_740_993), "numbers stay numbers unless asked")
    }

    func testZonesChangesEntriesAreZoneDictionaries() throws {
        let (recordName, token) = try makeUser("zonedict")
        try createZone("Kept", token)
        try createZone("Dropped", token)
        try ok("zones/modify", token, ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "Dropped"]]]]])
        let listed = try ok("zones/list", token)["zones"]?.arrayValue?.first { $0["zoneID"]?["zoneName"] == "Kept" }
        let changes = try ok("zones/changes", token)["zones"]?.arrayValue ?? []
        let kept = try XCTUnwrap(changes.first { $0["zoneID"]?["zoneName"] == "Kept" }, "\(changes)")
        XCTAssertEqual(kept["zoneID"]?["ownerRecordName"]?.stringValue, recordName)
        XCTAssertEqual(kept["atomic"], true)
        XCTAssertEqual(kept["syncToken"], listed?["syncToken"], "the zone's own sync token, as zones/list has it")
        let dropped = try XCTUnwrap(changes.first { $0["zoneID"]?["zoneName"] == "Dropped" })
        XCTAssertEqual(dropped["deleted"], true)
    }

    func testChangesZoneHonoursAZonesOwnResultsLimit() throws {
        let (_, token) = try makeUser("limits")
        try createZone("ScorebookData", token)
        try createZone("Other", token)
        try ok("records/modify", token, modifyBody((1...3).map { ("create", record("r\($0)", "Thing")) }))
        try ok("records/modify", token, modifyBody((1...3).map { ("create", record("o\($0)", "Thing")) }, zone: "Other"))
        let answer = try ok("changes/zone", token, ["zones": [
            ["zoneID": ["zoneName": "ScorebookData"], "resultsLimit": 1], ["zoneID": ["zoneName": "Other"]],
        ], "resultsLimit": 2])
        let zones = answer["zones"]?.arrayValue ?? []
        XCTAssertEqual(zones.first?["records"]?.arrayValue?.count, 1, "the zone's own limit: \(answer)")
        XCTAssertEqual(zones.first?["moreComing"], true)
        XCTAssertEqual(zones.last?["records"]?.arrayValue?.count, 2, "the request's limit for a zone without its own")
    }
}
