/// The pages a browser gets outside the API: `GET /` sends it to the console, and a share link
/// (`/share/{shortGUID}`) opened in a browser explains how to accept the invitation. The page is
/// the same for every link, real or not, so it tells a finder of a leaked link nothing; its
/// script (share.js) points the console link at the invitation from the address, in the browser,
/// so the console opens on it after sign-in. API clients (no `text/html` in `Accept`) get the
/// API's JSON answer as before.
enum SharePage {
    static let sharePrefix = "/share/"

    /// `GET /`: to the console.
    static let consoleRedirect: APIResponse = {
        var response = APIResponse(status: 302, text: "", contentType: "text/plain; charset=utf-8")
        response.headers = [("Location", "/console")]
        return response
    }()

    /// A browser opening a share link: a GET of `/share/{something}` that accepts HTML.
    @Sendable static func isPageRequest(_ request: RequestFacts) -> Bool {
        request.method == .get && request.path.utf8.count > sharePrefix.utf8.count && request.accept?.lowercased().contains("text/html") == true
    }

    static let pageAnswer: APIResponse = {
        var response = APIResponse(status: 200, text: page, contentType: "text/html; charset=utf-8")
        response.headers = Console.securityHeaders + [("Cache-Control", "no-store")]
        return response
    }()

    static let page = """
        <!DOCTYPE html>
        <html lang="en">
        <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>A scorebook invitation</title>
        <script src="\(ConsoleFiles.shareScriptURL)" defer></script></head>
        <body>
        <h1>You were invited to a scorebook</h1>
        <p>If this link was sent to you, accept the invitation with the scorebook command line:</p>
        <pre>scorebook book accept URL</pre>
        <p>where URL is this page's address, or <a id="console-link" href="/console">sign in to the console</a> of this
        server, where the invitation waits for you to accept or decline it.</p>
        <p>Only the person the scorebook was shared with can open it.</p>
        </body>
        </html>

        """
}
