import Foundation
import RecordClient
import RecordModel
import XCTest

/// A `changes/zone` answer read in two steps: its next token at once, its records when decoded,
/// each kept as the server wrote it.
final class ZoneChangesAnswerTests: XCTestCase {
    let zone = ZoneID(zoneName: "ScorebookData")

    func client(_ answers: [String], status: Int = 200) -> RecordClient {
        let transport = RecordClientTests.ScriptedTransport(answers.map { HTTPResponse(status: status, body: Array($0.utf8)) })
        let endpoint = ServerEndpoint(baseURL: URL(string: "http://127.0.0.1:9")!, container: "iCloud.scorebook",
                                      environment: "production", token: "secret")
        return RecordClient(endpoint: endpoint, transport: transport)
    }

    func testTheNextTokenIsReadBeforeDecodingAndEachRecordIsKeptAsTheServerWroteIt() async throws {
        // Strings holding brackets, braces, escaped quotes and commas must not end a record early.
        let game = #"{"recordName":"Game|~|A","recordType":"Game","recordChangeTag":"t","fields":{"name":{"value":"a \"}], [{\" b","type":"STRING"}},"#
            + #""created":{"timestamp":1,"userRecordName":"_alice"}}"#
        let person = #"{ "recordName" : "Person|~|P", "recordType":"Person", "fields":{"tags":{"value":["x","]"],"type":"STRING_LIST"}} }"#
        let answer = #"{"zones":[{"zoneID":{"zoneName":"ScorebookData"},"records":["# + game + ", " + person
            + #",{"recordName":"Match|~|M","deleted":true}],"syncToken":"dG9r","moreComing":true}]}"#
        let read = try await client([answer]).fetchZoneChangesAnswer(zoneID: zone, syncToken: nil, resultsLimit: nil)
        XCTAssertEqual(read.nextSyncToken, "dG9r")

        let page = try read.decode()
        XCTAssertEqual(page.changes.map(\.recordName), ["Game|~|A", "Person|~|P", "Match|~|M"])
        XCTAssertEqual(page.serverJSON["Game|~|A"], Array(game.utf8))
        XCTAssertEqual(page.serverJSON["Person|~|P"], Array(person.utf8))
        XCTAssertNil(page.serverJSON["Match|~|M"], "a tombstone has no server copy")
        guard case .saved(let decoded) = page.changes[0] else { return XCTFail("a saved record") }
        XCTAssertEqual(try Record(responseJSON: JSONValue.parse(page.serverJSON["Game|~|A"] ?? [])), decoded)
    }

    func testNoNextTokenWhenNoMoreIsComingOrTheAnswerIsAnError() async throws {
        let last = #"{"zones":[{"zoneID":{"zoneName":"ScorebookData"},"syncToken":"dG9r","moreComing":false,"records":[]}]}"#
        let read = try await client([last]).fetchZoneChangesAnswer(zoneID: zone, syncToken: nil, resultsLimit: nil)
        XCTAssertNil(read.nextSyncToken)
        XCTAssertEqual(try read.decode().syncToken, "dG9r")

        let expired = #"{"zones":[{"zoneID":{"zoneName":"ScorebookData"},"serverErrorCode":"CHANGE_TOKEN_EXPIRED","reason":"too old"}]}"#
        let failed = try await client([expired]).fetchZoneChangesAnswer(zoneID: zone, syncToken: "b2xk", resultsLimit: nil)
        XCTAssertNil(failed.nextSyncToken)
        XCTAssertThrowsError(try failed.decode()) { error in
            XCTAssertEqual((error as? RecordClientError)?.serverErrorCode, .changeTokenExpired)
        }

        let escaped = #"{"zones":[{"zoneID":{"zoneName":"ScorebookData"},"syncToken":"a\/b","moreComing":true,"records":[]}]}"#
        let unread = try await client([escaped]).fetchZoneChangesAnswer(zoneID: zone, syncToken: nil, resultsLimit: nil)
        XCTAssertNil(unread.nextSyncToken, "a token with an escape is left to the decoding")
        XCTAssertEqual(try unread.decode().syncToken, "a/b")
    }
}
