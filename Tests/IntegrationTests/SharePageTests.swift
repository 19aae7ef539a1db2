import Foundation
import RecordModel
import XCTest

/// A share link opened in a browser gets a page that tells nothing about the book; API clients
/// keep the JSON answer; `/` sends a browser to the console.
final class SharePageTests: DaemonTestCase {
    func testAShareLinkInABrowserIsTheSamePageForARealAndAnUnknownLink() throws {
        let ann = try makeUser("ann")
        try createZone("Secret", ann.token)
        let saved = try modify(ann.token, [("create", [
            "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "fields": ["cloudkit.title": ["value": "Ann's secret club"]],
            "publicPermission": "NONE", "participants": [],
        ])], zone: "Secret")
        let link = try XCTUnwrap(saved.first?["url"]?.stringValue)
        let path = try XCTUnwrap(URL(string: link)?.path)
        let guid = try XCTUnwrap(saved.first?["shortGUID"]?.stringValue ?? path.split(separator: "/").last.map(String.init))
        let html = [("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8")]

        let real = try daemon.request("GET", path, headers: html)
        let unknown = try daemon.request("GET", "/share/\(String(repeating: "x", count: guid.count))", headers: html)
        XCTAssertEqual(real.status, 200)
        XCTAssertEqual(real.headers["content-type"], "text/html; charset=utf-8")
        XCTAssertTrue(real.text.contains("scorebook book accept"), real.text)
        XCTAssertTrue(real.text.contains("/console"), real.text)
        XCTAssertEqual(real.body, unknown.body, "a leaked link tells nothing")
        XCTAssertEqual(unknown.status, 200)
        for secret in ["Ann", "secret", guid, ann.userRecordName] { XCTAssertFalse(real.text.contains(secret), secret) }
        XCTAssertNotNil(real.headers["content-security-policy"])

        // An API client gets JSON, as before the page existed.
        for headers in [[("Accept", "application/json")], []] {
            let answer = try daemon.request("GET", path, headers: headers).parsed()
            XCTAssertEqual(answer.status, 404)
            XCTAssertEqual(answer.body["serverErrorCode"], "NOT_FOUND")
        }
    }

    func testTheRootRedirectsToTheConsole() throws {
        let root = try daemon.request("GET", "/")
        XCTAssertEqual(root.status, 302)
        XCTAssertEqual(root.headers["location"], "/console")
        XCTAssertEqual(try daemon.request("GET", "/console").status, 200)
    }
}
