import Foundation
import RecordModel
import TestSupport
import XCTest

/// A web app on a second origin (a page served from another loopback port) drives the daemon from
/// headless Chromium the way CloudKit JS does: preflighted POSTs with `ckAPIToken` and `ckSession`,
/// `tokens/create` under `/device/1/`, and a bare courier long-poll woken by a write from the CLI.
/// The same page from an origin not on `--allow-origin` is blocked by the browser.
final class BrowserOriginTests: XCTestCase {
    var pageServer: Process?
    var daemon: DaemonProcess?
    var browser: WebDriver?

    override func tearDownWithError() throws {
        browser?.quit()
        if let pageServer, pageServer.isRunning {
            pageServer.terminate()
            pageServer.waitUntilExit()
        }
        try daemon?.stop()
    }

    /// Serves an empty page at `http://127.0.0.1:PORT/app.html` (Python's own static server).
    func startPageServer() throws -> Int {
        let (server, port) = try Self.servePage()
        pageServer = server
        return port
    }

    /// The page server itself, for any test that needs a second origin; the caller ends it.
    static func servePage() throws -> (server: Process, port: Int) {
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "web-app")
        try Data("<!doctype html><title>app</title><p>web app</p>".utf8).write(to: directory.appendingPathComponent("app.html"))
        let port = try PostgresTestCluster.freePort()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["python3", "-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", directory.path]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        for _ in 0..<100 {
            if (try? RawHTTP.send(port: port, method: "GET", path: "/app.html", headers: [], body: [], timeout: 2))?.status == 200 {
                return (server, port)
            }
            usleep(50_000)
        }
        server.terminate()
        throw DaemonError("the page server did not start on port \(port)")
    }

    /// The page's part: CloudKit JS's calls with `fetch`, results left in `window.appResults`.
    static let appScript = """
        const [base, apiToken, session] = arguments;
        const credentials = `ckAPIToken=${encodeURIComponent(apiToken)}&ckSession=${encodeURIComponent(session)}`;
        const call = async (path, body) => {
          const answer = await fetch(`${base}${path}?${credentials}`, {
            method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
          return { status: answer.status, webAuthToken: answer.headers.get('X-Apple-CloudKit-Web-Auth-Token'), body: await answer.json() };
        };
        window.appResults = {};
        (async () => {
          try {
            const db = '/database/1/iCloud.scorebook/production/private';
            window.appResults.current = await call(`${db}/users/current`, {});
            window.appResults.subscribed = await call(`${db}/subscriptions/modify`, { operations: [{ operationType: 'create',
              subscription: { subscriptionID: 'web-app', subscriptionType: 'database' } }] });
            const created = await call('/device/1/iCloud.scorebook/production/tokens/create', { apnsEnvironment: 'development' });
            window.appResults.created = created;
            window.appResults.polling = true;
            // Bare, as CloudKit JS polls: answered with the next notification itself.
            const woken = await fetch(`${created.body.webcourierURL}?timeout=30`);
            window.appResults.poll = { status: woken.status, body: await woken.json() };
          } catch (error) {
            window.appResults.error = String(error);
          }
        })();
        """

    func testAPageOnAnAllowedOriginSyncsAndIsPushedToAndAnotherOriginIsBlocked() throws {
        try WebDriver.requireBrowser()
        let pagePort = try startPageServer()
        let started = try DaemonProcess.start(extraArguments: ["--allow-origin", "http://127.0.0.1:\(pagePort)"])
        daemon = started
        let alice = try started.createUserInfo("alice")
        let apiToken = try started.createAPIToken()
        let driver = try WebDriver.start()
        browser = driver
        let base = started.baseURL.absoluteString

        try driver.navigate(to: "http://127.0.0.1:\(pagePort)/app.html")
        try driver.execute(Self.appScript, [.string(base), .string(apiToken), .string(alice.token)])
        try driver.wait(for: "the courier long-poll to start", timeout: 15, "return window.appResults.polling || window.appResults.error")
        let early = try driver.execute("return window.appResults")
        XCTAssertNil(early["error"], early.serializedString())
        XCTAssertEqual(early["current"]?["status"], 200, "a preflighted POST with ckSession: \(early.serializedString())")
        XCTAssertEqual(early["current"]?["body"]?["userRecordName"]?.stringValue, alice.userRecordName)
        XCTAssertEqual(early["current"]?["webAuthToken"]?.stringValue, alice.token, "the exposed rotating-token header")
        XCTAssertEqual(early["subscribed"]?["status"], 200)
        XCTAssertEqual(early["created"]?["status"], 200, "tokens/create under /device/1/")

        // A write from the CLI wakes the page's bare long-poll.
        let laptop = CLIMachine("laptop")
        try laptop.login(started, token: alice.token)
        try laptop.run("person", "add", "Ann")
        _ = try laptop.sync()
        let poll = try driver.wait(for: "the courier to answer", timeout: 20, "return window.appResults.poll || window.appResults.error")
        XCTAssertEqual(poll["status"], 200, poll.serializedString())
        XCTAssertEqual(poll["body"]?["ck"]?["met"]?["sid"], "web-app", poll.serializedString())

        // The same page from an origin not on the list: the browser refuses the answer.
        try driver.navigate(to: "http://localhost:\(pagePort)/app.html")
        try driver.execute(Self.appScript, [.string(base), .string(apiToken), .string(alice.token)])
        let blocked = try driver.wait(for: "the blocked call to fail", timeout: 15, "return window.appResults.error || window.appResults.current")
        XCTAssertTrue(blocked.stringValue?.contains("Failed to fetch") ?? false, "blocked by CORS: \(blocked.serializedString())")
    }

    /// CloudKit JS's sign-in: the page's request without a user is answered with the sign-in
    /// page's URL; the page opens it in a popup, the person signs in there, and the popup posts
    /// `{ckSession}` back to the page, which then calls the API as that user.
    static let signInScript = """
        const [base, apiToken] = arguments;
        window.signInResults = {};
        window.addEventListener('message', (event) => { window.signInResults.message = { origin: event.origin, data: event.data }; });
        (async () => {
          try {
            const db = '/database/1/iCloud.scorebook/production/private';
            const anonymous = await fetch(`${base}${db}/users/current?ckAPIToken=${apiToken}`);
            const refused = await anonymous.json();
            window.signInResults.refused = { status: anonymous.status, body: refused };
            window.signInResults.opened = !!window.open(refused.redirectURL, 'signin', 'popup,width=440,height=560');
          } catch (error) {
            window.signInResults.error = String(error);
          }
        })();
        """

    func testAPageOnAnAllowedOriginSignsInThroughThePopup() throws {
        try WebDriver.requireBrowser()
        let pagePort = try startPageServer()
        let pageOrigin = "http://127.0.0.1:\(pagePort)"
        let started = try DaemonProcess.start(extraArguments: ["--allow-origin", pageOrigin])
        daemon = started
        let alice = try started.createUserInfo("alice")
        XCTAssertEqual(try started.setPassword("alice", input: "alice's web password\n").status, 0)
        let apiToken = try started.createAPIToken()
        let driver = try WebDriver.start()
        browser = driver
        let base = started.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))

        try driver.navigate(to: "\(pageOrigin)/app.html")
        let appWindow = try driver.command("GET", "/window")
        try driver.execute(Self.signInScript, [.string(base), .string(apiToken)])
        let opened = try driver.wait(for: "the popup to open", timeout: 15, "return window.signInResults.opened || window.signInResults.error")
        XCTAssertEqual(opened, true, opened.serializedString())
        let refused = try driver.execute("return window.signInResults.refused")
        XCTAssertEqual(refused["status"], 421, refused.serializedString())
        XCTAssertEqual(refused["body"]?["redirectURL"]?.stringValue,
                       "\(base)/signin?container=iCloud.scorebook&origin=http%3A%2F%2F127.0.0.1%3A\(pagePort)")

        try driver.signInThroughPopup(openedFrom: appWindow, name: "alice", password: "alice's web password")
        let message = try driver.wait(for: "the token from the popup", timeout: 20, "return window.signInResults.message")
        XCTAssertEqual(message["origin"]?.stringValue, base, "posted by the daemon's page")
        let session = try XCTUnwrap(message["data"]?["ckSession"]?.stringValue, message.serializedString())

        // The page uses it as CloudKit JS does.
        try driver.execute(Self.appScript, [.string(base), .string(apiToken), .string(session)])
        let current = try driver.wait(for: "the signed-in call", timeout: 15, "return window.appResults.current || window.appResults.error")
        XCTAssertEqual(current["status"], 200, current.serializedString())
        XCTAssertEqual(current["body"]?["userRecordName"]?.stringValue, alice.userRecordName)
        let windows = try driver.command("GET", "/window/handles").arrayValue ?? []
        XCTAssertEqual(windows.count, 1, "the popup closed itself")
    }
}
