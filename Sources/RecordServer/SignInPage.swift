import Foundation
import RecordModel
import RecordStore

/// The sign-in pages: self-contained (no external resources) under a strict Content-Security-
/// Policy; the one script, which hands the token over, runs by a nonce made for that answer.
enum SignInPage {
    static func form(container: String, origin: String, message: String?, status: Int) -> APIResponse {
        let notice = message.map { "<p class=\"error\" role=\"alert\">\(escape($0))</p>" } ?? ""
        let body = """
            <h1>Sign in to Scorebook</h1>
            \(notice)
            <form method="post" action="/signin">
            <input type="hidden" name="container" value="\(escape(container))">
            <input type="hidden" name="origin" value="\(escape(origin))">
            <p><label>Name or email<br><input name="name" autocomplete="username" required autofocus></label></p>
            <p><label>Password<br><input name="password" type="password" autocomplete="current-password" required></label></p>
            <p><button type="submit">Sign in</button></p>
            </form>
            """
        return page(title: "Sign in", body: body, status: status, scriptNonce: nil)
    }

    static func refusal(origin: String) -> APIResponse {
        let body = "<h1>Origin not allowed</h1><p>This server does not hand sign-ins to \(escape(origin)). "
            + "Its administrator can allow it with <code>scorebookd serve --allow-origin</code>.</p>"
        return page(title: "Origin not allowed", body: body, status: 403, scriptNonce: nil)
    }

    /// The answer to a right password: posts `{ckSession: token}` to the opener at exactly
    /// `origin` and closes; opened without an opener (the console in the same window), it goes
    /// back to `origin` with the token in the fragment, which never reaches a server.
    static func handOff(token: String, origin: String) -> APIResponse {
        let nonce = RandomToken.hex(bytes: 16)
        let script = """
            var token = \(jsString(token)), origin = \(jsString(origin));
            if (window.opener) { window.opener.postMessage({ "ckSession": token }, origin); window.close(); }
            else { window.location.replace(origin + "/console#ckSession=" + encodeURIComponent(token)); }
            """
        let body = "<h1>Signed in</h1><p>You can close this window.</p><script nonce=\"\(nonce)\">\n\(script)\n</script>"
        return page(title: "Signed in", body: body, status: 200, scriptNonce: nonce)
    }

    private static func page(title: String, body: String, status: Int, scriptNonce: String?) -> APIResponse {
        let html = """
            <!DOCTYPE html>
            <html lang="en">
            <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>\(title)</title>
            <style>body{font-family:system-ui,sans-serif;max-width:24rem;margin:3rem auto;padding:0 1rem}.error{color:#b00020}input{width:100%}</style>
            </head>
            <body>
            \(body)
            </body>
            </html>

            """
        var response = APIResponse(status: status, text: html, contentType: "text/html; charset=utf-8")
        let script = scriptNonce.map { "script-src 'nonce-\($0)'" } ?? "script-src 'none'"
        response.headers = [
            ("Content-Security-Policy",
             "default-src 'none'; \(script); style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
            ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY"),
            ("Cache-Control", "no-store"),
        ]
        return response
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&#39;")
    }

    /// A JavaScript string literal that cannot end the script element.
    static func jsString(_ text: String) -> String {
        String(decoding: JSONValue.string(text).serialized(), as: UTF8.self).replacingOccurrences(of: "<", with: "\\u003c")
    }
}
