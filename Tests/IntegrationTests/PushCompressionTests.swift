import Foundation
import RecordModel
import XCTest

/// The push path is never compressed, whatever the client accepts: an event stream's events and
/// a parked long-poll's answer are written as they happen, in plain text.
final class PushCompressionTests: PushTestCase {
    /// A title long enough that each notification is well over the 1 KB compression threshold.
    let longTitle = String(repeating: "a title to make the notification large ", count: 40)

    func testEventStreamsAndParkedLongPollsAreNotCompressedEvenWhenGzipIsAccepted() throws {
        try createZone(zone)
        try subscribe(querySubscription("items", type: "Item", desiredKeys: ["title"]))
        let courier = try createCourier()
        let stream = try openEventStream(courier, headers: [("Accept-Encoding", "gzip")])
        XCTAssertEqual(stream.waitForHead(timeout: 5), 200)
        XCTAssertNil(stream.headers["content-encoding"], "\(stream.headers)")
        XCTAssertTrue(stream.waitForComment("connected", timeout: 5))
        try create(newName("Item"), "Item", ["title": .string(longTitle)])
        let event = try XCTUnwrap(stream.nextEvent(timeout: 5), "the event arrives as plain text")
        XCTAssertGreaterThan(event.data.utf8.count, 1024)
        XCTAssertEqual(try JSONValue.parse(Array(event.data.utf8))["ck"]?["qry"]?["af"]?["title"]?.stringValue, longTitle)

        // The long-poll resumes after the stream's event (its id is the cursor).
        let cursor = try XCTUnwrap(event.id)
        let parked = background { [client] in
            try client.daemon.request("GET", "\(courier)?since=\(client.percentEncoded(cursor))&timeout=10", token: client.token,
                                headers: [("Accept-Encoding", "gzip")], timeout: 20)
        }
        // The poll parks first (nothing is pending; the stream is the other waiter), then the change wakes it.
        XCTAssertEqual(try waitForWaiters(2, on: daemon, within: 4), 2, "the event stream and the parked long-poll wait")
        try create(newName("Item"), "Item", ["title": .string(longTitle)])
        let answer = try XCTUnwrap(parked.wait(timeout: 15), "the long-poll answered").get()
        XCTAssertEqual(answer.status, 200, answer.text.prefix(300).description)
        XCTAssertNil(answer.headers["content-encoding"], "\(answer.headers)")
        XCTAssertGreaterThan(answer.body.count, 1024)
        XCTAssertEqual(try answer.parsed().body["notifications"]?.arrayValue?.count, 1)
    }
}
