import Foundation
import RecordModel
import RecordStore

/// The console: a page, a script and a style sheet compiled into the daemon (no resource bundle
/// to find at run time, no build step, nothing loaded from elsewhere). The page is an ordinary
/// client of the public API: it signs in with a user token, reads with `Authorization: Bearer`,
/// and listens on the courier's event stream.
///
/// `GET /console` is the page; its script and style sheet are separate files, so the
/// `Content-Security-Policy` allows scripts and styles from this origin only, and no inline script
/// or style at all. Their URLs carry a digest of their content, so a browser keeps them for good
/// and a new daemon's page always names its own.
enum Console {
    /// The console's paths and their answers (for GET; a route each). `/console/` is the page's
    /// route too: the router reads a path without its empty segments.
    static var files: [(path: String, answer: APIResponse)] {
        let page = answer(ConsoleFiles.page, contentType: "text/html; charset=utf-8", cache: "no-cache")
        return [
            ("/console", page),
            (ConsoleFiles.scriptPath, answer(ConsoleFiles.script, contentType: "text/javascript; charset=utf-8", cache: immutable)),
            (ConsoleFiles.stylePath, answer(ConsoleFiles.style, contentType: "text/css; charset=utf-8", cache: immutable)),
            (ConsoleFiles.shareScriptPath, answer(ConsoleFiles.shareScript, contentType: "text/javascript; charset=utf-8", cache: immutable)),
        ]
    }

    /// The versioned files never change under their URL (a new version is a new `?v=`).
    static let immutable = "public, max-age=31536000, immutable"

    /// What every console answer carries. `connect-src 'self'`: the page talks to this daemon only
    /// (API calls and the event stream); `img-src` adds `data:`/`blob:` for the favicon and
    /// pictures; nothing may frame the page, and it sends no referrer (its URLs hold no
    /// credentials, but a book's names are nobody else's business). `form-action 'none'`: the
    /// sign-in form is handled by the script only, so even with scripts off the browser never
    /// submits the token in a URL.
    static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy",
         "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
            + "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
        // Pages that open the console cannot reach it; its own sign-in popup can still post back to it.
        ("Cross-Origin-Opener-Policy", "same-origin-allow-popups"),
    ]

    static func answer(_ text: String, contentType: String, cache: String) -> APIResponse {
        var response = APIResponse(status: 200, text: text, contentType: contentType)
        response.headers = securityHeaders + [("Cache-Control", cache)]
        return response
    }
}

/// The console's files as served, from Sources/RecordServer/Console (embedded by the package as
/// `PackageResources`). The page's `{{SCRIPT}}` and `{{STYLE}}` become the URLs of the other
/// two, which carry their digests.
enum ConsoleFiles {
    static let scriptPath = "/console/console.js"
    static let stylePath = "/console/console.css"

    /// One script for the page: the scoreboard's pure functions (scoreboard.js, which the node
    /// tests load on their own), then the page's code (console.js), which uses them.
    static let script = text(PackageResources.scoreboard_js) + text(PackageResources.console_js)
    static let style = text(PackageResources.console_css)

    /// The share page's script (share.js): points its console link at the page's invitation.
    static let shareScript = text(PackageResources.share_js)
    static let shareScriptPath = "/console/share.js"
    static var shareScriptURL: String { "\(shareScriptPath)?v=\(TokenHash.hex(shareScript).prefix(16))" }

    static let page: String = text(PackageResources.index_html)
        .replacingOccurrences(of: "{{SCRIPT}}", with: "\(scriptPath)?v=\(TokenHash.hex(script).prefix(16))")
        .replacingOccurrences(of: "{{STYLE}}", with: "\(stylePath)?v=\(TokenHash.hex(style).prefix(16))")

    private static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}
