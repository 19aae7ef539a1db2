import Foundation
import RecordModel
import XCTest

/// Web sign-in through the real daemon: passwords set with `scorebookd user password` (from
/// standard input or a file), the `/signin` form's answers, the hand-off of the new token to
/// allowed origins only, throttled guessing, and the `redirectURL` of `AUTHENTICATION_REQUIRED`.
final class SignInTests: DaemonTestCase {
    static let appOrigin = "http://app.example:8000"
    // Requests say which address they come from, so the per-address limit of one test does not
    // throttle the others.
    override class var daemonArguments: [String] { ["--allow-origin", appOrigin, "--trusted-proxy", "127.0.0.1"] }

    func setPassword(_ daemon: DaemonProcess, _ name: String, input: String, file: URL? = nil) throws
        -> (status: Int32, stdout: String, stderr: String)
    {
        try daemon.setPassword(name, input: input, file: file)
    }

    func runWithInput(_ executable: String, _ arguments: [String], input: String) throws -> (status: Int32, stdout: String, stderr: String) {
        try DaemonProcess.runWithInput(executable, arguments, input: input)
    }

    func signIn(_ daemon: DaemonProcess, _ login: String, _ password: String, origin: String = SignInTests.appOrigin,
                address: String = "192.0.2.1", page: Bool = false) throws -> HTTPAnswer
    {
        try daemon.signIn(login, password, container: Self.container, origin: origin, address: address, page: page)
    }

    func handOff(_ answer: HTTPAnswer) -> (token: String, origin: String)? { DaemonProcess.handOff(answer) }

    func userRecordName(_ token: String) throws -> String? {
        try daemon.get(path("users/current"), token: token).body["userRecordName"]?.stringValue
    }

    func liveTokens(_ name: String) throws -> Int64? {
        let users = try administer(try daemon, ["user", "list", "--json"])
        return users.arrayValue?.first { $0["name"]?.stringValue == name }?["liveTokens"]?.int64Value
    }

    func testPasswordFromStandardInputOrFileSignsInByNameOrEmail() throws {
        let info = try daemon.createUserInfo("carol", email: "carol@example.com")
        let set = try setPassword(try daemon, "carol", input: "correct horse battery\n")
        XCTAssertEqual(set.status, 0, set.stderr)
        XCTAssertEqual(try JSONValue.parse(set.stdout)["name"]?.stringValue, "carol")

        let page = try daemon.request("GET", "/signin?container=\(Self.container)&origin=\(Self.appOrigin)")
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.text.contains("type=\"password\""), page.text)
        XCTAssertTrue(page.headers["content-security-policy"]?.contains("default-src 'none'") ?? false, "\(page.headers)")
        XCTAssertFalse(page.text.contains("http://app.example:8000/"), "no external resources")

        let answer = try signIn(try daemon, "carol", "correct horse battery", page: true)
        XCTAssertEqual(answer.status, 200, answer.text)
        let handed = try XCTUnwrap(handOff(answer), answer.text)
        XCTAssertEqual(handed.origin, Self.appOrigin, "posted to exactly the page's origin")
        XCTAssertEqual(try userRecordName(handed.token), info.userRecordName, "the new token works")
        let csp = answer.headers["content-security-policy"] ?? ""
        XCTAssertTrue(csp.contains("script-src 'nonce-"), csp)

        let byEmail = try signIn(try daemon, "carol@example.com", "correct horse battery")
        XCTAssertNotNil(handOff(byEmail), byEmail.text)

        // A file's first line replaces the password.
        let file = DaemonProcess.makeTemporaryDirectory(prefix: "signin").appendingPathComponent("password")
        try Data("a new secret phrase\nignored\n".utf8).write(to: file)
        let fromFile = try setPassword(try daemon, "carol", input: "", file: file)
        XCTAssertEqual(fromFile.status, 0, fromFile.stderr)
        XCTAssertEqual(try signIn(try daemon, "carol", "correct horse battery", address: "192.0.2.2").status, 401)
        XCTAssertNotNil(handOff(try signIn(try daemon, "carol", "a new secret phrase", address: "192.0.2.2")))

        // Bad input: one line and a non-zero exit.
        let short = try setPassword(try daemon, "carol", input: "short\n")
        XCTAssertNotEqual(short.status, 0)
        assertOneLine(short.stderr, "a short password")
        let nobody = try setPassword(try daemon, "nobody-here", input: "long enough password\n")
        XCTAssertNotEqual(nobody.status, 0)
        assertOneLine(nobody.stderr, "an unknown user")
    }

    func testWrongNameAndWrongPasswordLookTheSame() throws {
        _ = try daemon.createUserInfo("dave")
        XCTAssertEqual(try setPassword(try daemon, "dave", input: "dave's password\n").status, 0)
        let wrongPassword = try signIn(try daemon, "dave", "not the password", address: "192.0.2.10").parsed()
        let wrongName = try signIn(try daemon, "nobody-at-all", "dave's password", address: "192.0.2.11").parsed()
        assertError(wrongPassword, 401, "AUTHENTICATION_FAILED")
        XCTAssertEqual(wrongPassword.body["reason"], wrongName.body["reason"])
        XCTAssertEqual(wrongPassword.status, wrongName.status)
        // A user without a password cannot sign in at all.
        _ = try daemon.createUserInfo("erin")
        assertError(try signIn(try daemon, "erin", "", address: "192.0.2.12").parsed(), 401, "AUTHENTICATION_FAILED")
        // Shown as a page to a browser, with the form again.
        let page = try signIn(try daemon, "dave", "not the password", address: "192.0.2.13", page: true)
        XCTAssertEqual(page.status, 401)
        XCTAssertTrue(page.text.contains("wrong name or password") && page.text.contains("<form"), page.text)
    }

    func testFailedSignInsAreThrottledPerUserAndPerAddress() throws {
        _ = try daemon.createUserInfo("frank")
        XCTAssertEqual(try setPassword(try daemon, "frank", input: "frank's password\n").status, 0)
        // Per user: five failures from five addresses, then even the right password waits.
        for attempt in 1...5 {
            XCTAssertEqual(try signIn(try daemon, "frank", "guess \(attempt)", address: "198.51.100.\(attempt)").status, 401)
        }
        let throttled = try signIn(try daemon, "frank", "frank's password", address: "198.51.100.9").parsed()
        assertError(throttled, 429, "THROTTLED")
        XCTAssertGreaterThan(throttled.body["retryAfter"]?.int64Value ?? 0, 0, "\(throttled.body)")

        // Per address: five failures for five names, then that address waits for any user.
        _ = try daemon.createUserInfo("grace")
        XCTAssertEqual(try setPassword(try daemon, "grace", input: "grace's password\n").status, 0)
        for attempt in 1...5 {
            XCTAssertEqual(try signIn(try daemon, "guess-\(attempt)", "whatever", address: "203.0.113.7").status, 401)
        }
        assertError(try signIn(try daemon, "grace", "grace's password", address: "203.0.113.7").parsed(), 429, "THROTTLED")
        XCTAssertNotNil(handOff(try signIn(try daemon, "grace", "grace's password", address: "203.0.113.8")), "another address may")
    }

    func testTokenGoesOnlyToAnAllowedOriginOrTheDaemonsOwn() throws {
        _ = try daemon.createUserInfo("heidi")
        XCTAssertEqual(try setPassword(try daemon, "heidi", input: "heidi's password\n").status, 0)
        let before = try liveTokens("heidi")
        for origin in ["http://evil.example", "*", "http://app.example:8000/path"] {
            let refused = try signIn(try daemon, "heidi", "heidi's password", origin: origin, address: "192.0.2.20")
            XCTAssertEqual(refused.status, 403, "\(origin): \(refused.text)")
            XCTAssertTrue(refused.text.contains("not allowed"), refused.text)
            XCTAssertFalse(refused.text.contains("postMessage"), refused.text)
        }
        XCTAssertEqual(try liveTokens("heidi"), before, "no token made for a refused origin")
        let form = try daemon.request("GET", "/signin?container=\(Self.container)&origin=http%3A%2F%2Fevil.example")
        XCTAssertEqual(form.status, 403, "said before a password is typed")
        XCTAssertTrue(form.text.contains("not allowed") && !form.text.contains("<form"), form.text)

        let ownOrigin = try daemon.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let answer = try signIn(try daemon, "heidi", "heidi's password", origin: ownOrigin, address: "192.0.2.20")
        XCTAssertEqual(handOff(answer)?.origin, ownOrigin, answer.text)
        XCTAssertEqual(try liveTokens("heidi"), (before ?? 0) + 1)
    }

    func testAuthenticationRequiredCarriesTheSignInPage() throws {
        let apiToken = try daemon.createAPIToken()
        let own = try daemon.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let fromApp = try daemon.request("GET", path("users/current") + "?ckAPIToken=\(apiToken)", headers: [("Origin", Self.appOrigin)]).parsed()
        assertError(fromApp, 421, "AUTHENTICATION_REQUIRED")
        XCTAssertEqual(fromApp.body["redirectURL"]?.stringValue,
                       "\(own)/signin?container=\(Self.container)&origin=http%3A%2F%2Fapp.example%3A8000")
        let foreign = try daemon.request("GET", path("users/current") + "?ckAPIToken=\(apiToken)", headers: [("Origin", "http://evil.example")]).parsed()
        XCTAssertEqual(foreign.body["redirectURL"]?.stringValue, "\(own)/signin?container=\(Self.container)", "no origin it may not use")
        // The page the URL names is the sign-in form.
        let redirect = try XCTUnwrap(URL(string: fromApp.body["redirectURL"]?.stringValue ?? ""))
        let page = try daemon.request("GET", redirect.path + "?" + (redirect.query ?? ""))
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.text.contains("value=\"http://app.example:8000\""), page.text)
        // Without an API token there is no sign-in page to offer.
        let bare = try daemon.get(path("users/current"), token: nil)
        assertError(bare, 421, "AUTHENTICATION_REQUIRED")
        XCTAssertNil(bare.body["redirectURL"])
    }

    func testSignedInUserChangesItsPassword() throws {
        let info = try daemon.createUserInfo("ivan")
        let endpoint = path("users/password")
        // No password yet: the token alone sets one.
        XCTAssertEqual(try daemon.post(endpoint, token: info.token, json: #"{"newPassword": "ivan's first password"}"#).status, 200)
        assertError(try daemon.post(endpoint, token: info.token, json: #"{"currentPassword": "wrong one", "newPassword": "ivan's second password"}"#),
                    403, "ACCESS_DENIED")
        assertError(try daemon.post(endpoint, token: info.token, json: #"{"currentPassword": "ivan's first password", "newPassword": "short"}"#),
                    400, "BAD_REQUEST")
        let changed = try daemon.post(endpoint, token: info.token, json: #"{"currentPassword": "ivan's first password", "newPassword": "ivan's second password"}"#)
        XCTAssertEqual(changed.status, 200, "\(changed.body)")
        XCTAssertEqual(try signIn(try daemon, "ivan", "ivan's first password", address: "192.0.2.30").status, 401)
        XCTAssertNotNil(handOff(try signIn(try daemon, "ivan", "ivan's second password", address: "192.0.2.31")))
        assertError(try daemon.post(endpoint, token: nil, json: #"{"newPassword": "anyone's password"}"#), 421, "AUTHENTICATION_REQUIRED")
    }

    func testAccountPasswordCommandChangesTheSignInPassword() throws {
        let info = try daemon.createUserInfo("judy")
        let machine = CLIMachine("judy")
        try machine.login(try daemon, token: info.token)
        let account = ["--store", machine.storePath, "account", "password"]
        let first = try runWithInput("scorebook", account, input: "\njudy's first password\n")
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertEqual(first.stdout, "password changed\n")
        XCTAssertNotNil(handOff(try signIn(try daemon, "judy", "judy's first password", address: "192.0.2.40")))

        let wrong = try runWithInput("scorebook", account, input: "not it\nanything else at all\n")
        XCTAssertNotEqual(wrong.status, 0)
        assertOneLine(wrong.stderr, "a wrong current password")
        let missing = try runWithInput("scorebook", account, input: "judy's first password\n")
        XCTAssertNotEqual(missing.status, 0)
        assertOneLine(missing.stderr, "no new password")

        let second = try runWithInput("scorebook", account, input: "judy's first password\njudy's second password\n")
        XCTAssertEqual(second.status, 0, second.stderr)
        XCTAssertEqual(try signIn(try daemon, "judy", "judy's first password", address: "192.0.2.41").status, 401)
        XCTAssertNotNil(handOff(try signIn(try daemon, "judy", "judy's second password", address: "192.0.2.42")))
    }
}
