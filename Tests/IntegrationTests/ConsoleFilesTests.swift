import Foundation
import RecordModel
import XCTest

/// The console the daemon serves is the repository's files (Sources/RecordServer/Console), byte
/// for byte: the page with its two URLs filled in, the style sheet, and one script made of
/// scoreboard.js then console.js. Each URL's version is its file's digest, and each answer
/// carries the console's Content-Security-Policy.
final class ConsoleFilesTests: DaemonTestCase {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/RecordServer/Console")

    func file(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: Self.folder.appendingPathComponent(name))) }

    /// A file's version in its URL: the first 16 hex digits of its SHA-256.
    func version(_ bytes: [UInt8]) -> String { String(SHA256Hasher.hex(SHA256Hasher.digest(bytes)).prefix(16)) }

    func testServedFilesAreTheRepositorysFilesWithTheirPolicy() throws {
        let script = try file("scoreboard.js") + file("console.js")
        let style = try file("console.css")
        let scriptURL = "/console/console.js?v=\(version(script))"
        let styleURL = "/console/console.css?v=\(version(style))"
        let page = String(decoding: try file("index.html"), as: UTF8.self)
        XCTAssertTrue(page.contains("{{SCRIPT}}") && page.contains("{{STYLE}}"), "the page names both files by placeholder")
        let expectedPage = Array(page.replacingOccurrences(of: "{{SCRIPT}}", with: scriptURL)
            .replacingOccurrences(of: "{{STYLE}}", with: styleURL).utf8)

        let policy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
            + "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        for (path, bytes, type) in [("/console", expectedPage, "text/html"), (scriptURL, script, "text/javascript"), (styleURL, style, "text/css")] {
            let answer = try daemon.request("GET", path)
            XCTAssertEqual(answer.status, 200, path)
            XCTAssertTrue(answer.body == bytes, "\(path) is not the repository's file byte for byte")
            XCTAssertEqual(answer.headers["content-type"], "\(type); charset=utf-8", path)
            XCTAssertEqual(answer.headers["content-security-policy"], policy, path)
            XCTAssertEqual(answer.headers["cache-control"], path == "/console" ? "no-cache" : "public, max-age=31536000, immutable", path)
        }

        // The share page's own script, named by the page with its digest.
        let shareScript = try file("share.js")
        let shareURL = "/console/share.js?v=\(version(shareScript))"
        let served = try daemon.request("GET", shareURL)
        XCTAssertTrue(served.body == shareScript, "share.js is not the repository's file byte for byte")
        XCTAssertEqual(served.headers["content-type"], "text/javascript; charset=utf-8")
        XCTAssertEqual(served.headers["content-security-policy"], policy)
        let sharePage = try daemon.request("GET", "/share/0123456789abcdef", headers: [("Accept", "text/html")])
        XCTAssertTrue(sharePage.text.contains("<script src=\"\(shareURL)\" defer></script>"), sharePage.text)
    }
}
