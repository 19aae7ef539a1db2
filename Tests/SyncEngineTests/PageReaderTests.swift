import Foundation
import RecordClient
import RecordModel
@testable import SyncEngine
import Synchronization
import XCTest

/// The change feed read ahead of the pages being applied.
final class PageReaderTests: XCTestCase {
    /// Answers `changes/zone` from a script, and tells `onRequest` the number of each request.
    final class ScriptedFeed: HTTPTransport, Sendable {
        /// The answers not yet given, and how many requests came.
        private let script: Mutex<(answers: [HTTPResponse], count: Int)>
        let onRequest: @Sendable (Int) -> Void

        init(_ answers: [HTTPResponse], onRequest: @escaping @Sendable (Int) -> Void) {
            self.script = Mutex((answers, 0))
            self.onRequest = onRequest
        }

        func send(_ request: HTTPRequest) async throws -> HTTPResponse {
            let (number, answer) = script.withLock { script -> (Int, HTTPResponse?) in
                script.count += 1
                return (script.count, script.answers.isEmpty ? nil : script.answers.removeFirst())
            }
            onRequest(number)
            guard let answer else { throw RecordClientError.unreachable("no scripted answer left") }
            return answer
        }
    }

    let zone = ZoneID(zoneName: "ScorebookData")

    static func page(token: String, moreComing: Bool, record: String) -> HTTPResponse {
        HTTPResponse(status: 200, body: Array(#"""
            {"zones":[{"zoneID":{"zoneName":"ScorebookData"},"syncToken":"\#(token)","moreComing":\#(moreComing),"records":[{"recordName":"\#(record)","recordType":"Game","fields":{}}]}]}
            """#.utf8))
    }

    func database(_ answers: [HTTPResponse], onRequest: @escaping @Sendable (Int) -> Void = { _ in }) -> RecordClient {
        let endpoint = ServerEndpoint(baseURL: URL(string: "http://127.0.0.1:9")!, container: "iCloud.scorebook",
                                      environment: "production", token: "secret")
        return RecordClient(endpoint: endpoint, transport: ScriptedFeed(answers, onRequest: onRequest))
    }

    func testTheNextPageIsAskedForBeforeThePageBeforeIsTaken() async throws {
        let secondAsked = expectation(description: "the second page is asked for")
        let client = database([Self.page(token: "p1", moreComing: true, record: "Game|~|A"),
                               Self.page(token: "p2", moreComing: false, record: "Game|~|B")]) { number in
            if number == 2 { secondAsked.fulfill() }
        }
        let reader = PageReader(from: nil, database: client, zoneID: zone)
        defer { reader.stop() }
        // Nothing is taken yet: the reader goes on by itself.
        await fulfillment(of: [secondAsked], timeout: 30)
        let first = try await reader.page(after: nil)
        XCTAssertEqual(first?.changes.map(\.recordName), ["Game|~|A"])
        let second = try await reader.page(after: "p1")
        XCTAssertEqual(second?.changes.map(\.recordName), ["Game|~|B"])
        XCTAssertEqual(second?.moreComing, false)
    }

    func testAReaderElsewhereInTheFeedAnswersNilAndAnErrorStopsIt() async throws {
        let throttled = HTTPResponse(status: 503, body: Array(#"{"serverErrorCode":"THROTTLED","reason":"busy","retryAfter":1}"#.utf8))
        let reader = PageReader(from: "p0", database: database([Self.page(token: "p1", moreComing: true, record: "Game|~|A"), throttled]),
                                zoneID: zone)
        defer { reader.stop() }
        let misplaced = try await reader.page(after: "p7")
        XCTAssertNil(misplaced, "the first page read is the one after p0")
        do {
            _ = try await reader.page(after: "p1")
            XCTFail("the throttled answer is an error")
        } catch let error as RecordClientError {
            XCTAssertEqual(error.serverErrorCode, .throttled)
        }
    }
}
