import Foundation
import RecordModel
import TestSupport
import XCTest

/// Apple's CloudKit JS 1.2 as the daemon sees it, replayed request for request by a page on a
/// second origin in headless Chromium: the library's own query parameters on every call
/// (`ckjsBuildVersion`, `ckjsVersion`, `ckAPIToken`, and `ckSession=null` until someone signs in),
/// `users/current` answered `421` with the sign-in page, the popup's `postMessage`, the session
/// on every call after, `tokens/create` under `/device/1/`, and the courier polled bare (no
/// `since`, no credentials), its body read as `body.ck`, again 10 ms after each answer.
final class CloudKitJSBrowserTests: XCTestCase {
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

    static let container = "iCloud.scorebook.web"

    /// The library's side. `CK.call` is how CloudKit JS sends an API request: the same four
    /// query parameters every time, the session URL-encoded as it stands (`null` before sign-in).
    /// `CK.registerForNotifications` is its courier loop: poll the URL bare, hand the body to a
    /// parser that reads `body.ck`, poll again 10 ms after each answer.
    static let libraryScript = """
        const [base, apiToken, container] = arguments;
        const CK = window.CK = { session: null, requests: [], polls: [], callbacks: [], log: {} };
        CK.params = () => `ckjsBuildVersion=15GDev53&ckjsVersion=1.2.0&ckAPIToken=${encodeURIComponent(apiToken)}` +
          `&ckSession=${encodeURIComponent(CK.session)}`;
        CK.call = async (path, body) => {
          const url = `${base}${path}?${CK.params()}`;
          CK.requests.push(url);
          const init = body === undefined ? {} : { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify(body) };
          const answer = await fetch(url, init);
          return { status: answer.status, body: await answer.json() };
        };
        CK.db = (database, operation) => `/database/1/${container}/development/${database}/${operation}`;
        // What the library's notification parser does with a courier answer's body.
        CK.parse = (body) => {
          const ck = body && body.ck;
          if (!ck) return null;
          const query = ck.qry, zone = ck.fet;
          if (query) return { kind: 'query', subscriptionID: query.sid, recordName: query.rid, reason: query.fo, nid: ck.nid };
          if (zone) return { kind: 'zone', subscriptionID: zone.sid, zoneName: zone.zid, nid: ck.nid };
          if (ck.met) return { kind: 'database', subscriptionID: ck.met.sid, nid: ck.nid };
          return null;
        };
        CK.registerForNotifications = async () => {
          const created = await CK.call(`/device/1/${container}/development/tokens/create`, { apnsEnvironment: 'development' });
          CK.log.tokensCreate = created;
          const courier = created.body.webcourierURL;
          const poll = async () => {
            CK.polls.push({ url: courier, at: Date.now() });
            try {
              const answer = await fetch(courier);
              const body = await answer.json();
              const notification = CK.parse(body);
              if (notification) CK.callbacks.push(notification);
            } catch (error) {
              CK.log.pollError = String(error);
            }
            setTimeout(poll, 10);
          };
          poll();
        };
        window.addEventListener('message', (event) => {
          if (event.data && event.data.ckSession) { CK.session = event.data.ckSession; CK.log.signedInFrom = event.origin; }
        });
        // configure, then setUpAuth: who is signed in? Nobody: the sign-in page's URL.
        (async () => {
          try {
            CK.log.anonymousQuery = await CK.call(CK.db('public', 'records/query'), { query: { recordType: 'Notice' } });
            CK.log.setUpAuth = await CK.call(CK.db('public', 'users/current'));
            CK.log.popupOpened = !!window.open(CK.log.setUpAuth.body.redirectURL, 'signin', 'popup,width=440,height=560');
          } catch (error) {
            CK.log.error = String(error);
          }
        })();
        """

    /// After sign-in: the signed-in calls of an app, then the courier.
    static let signedInScript = """
        const CK = window.CK;
        (async () => {
          try {
            const zone = { zoneName: 'Games' };
            CK.log.current = await CK.call(CK.db('public', 'users/current'));
            CK.log.zone = await CK.call(CK.db('private', 'zones/modify'), { operations: [{ operationType: 'create', zone: { zoneID: zone } }] });
            CK.log.saved = await CK.call(CK.db('private', 'records/modify'), { zoneID: zone, operations: [{ operationType: 'create',
              record: { recordName: 'first-game', recordType: 'Game', fields: { name: { value: 'Catan' } } } }] });
            CK.log.fetched = await CK.call(CK.db('private', 'records/lookup'), { zoneID: zone, records: [{ recordName: 'first-game' }] });
            CK.log.queried = await CK.call(CK.db('private', 'records/query'), { zoneID: zone, query: { recordType: 'Game' } });
            CK.log.databaseChanges = await CK.call(CK.db('private', 'changes/database'), {});
            CK.log.zoneChanges = await CK.call(CK.db('private', 'changes/zone'), { zones: [{ zoneID: zone }] });
            CK.log.subscribed = await CK.call(CK.db('private', 'subscriptions/modify'), { operations: [{ operationType: 'create',
              subscription: { subscriptionID: 'new-games', subscriptionType: 'query', zoneID: zone,
                              query: { recordType: 'Game' }, firesOn: ['create'] } }] });
            await CK.registerForNotifications();
            CK.log.registered = true;
          } catch (error) {
            CK.log.error = String(error);
          }
        })();
        """

    func testCloudKitJSSignsInSyncsAndIsCalledBackOncePerNotification() throws {
        try WebDriver.requireBrowser()
        let (server, pagePort) = try BrowserOriginTests.servePage()
        pageServer = server
        let pageOrigin = "http://127.0.0.1:\(pagePort)"
        let started = try DaemonProcess.start(extraArguments: ["--allow-origin", pageOrigin])
        daemon = started
        let alice = try started.createUserInfo("alice")
        XCTAssertEqual(try started.setPassword("alice", input: "alice's web password\n").status, 0)
        let apiToken = try started.createAPIToken()
        let driver = try WebDriver.start()
        browser = driver
        let base = started.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))

        // configure and setUpAuth, signed out: public reads answer, users/current asks for a user.
        try driver.navigate(to: "\(pageOrigin)/app.html")
        let appWindow = try driver.command("GET", "/window")
        try driver.execute(Self.libraryScript, [.string(base), .string(apiToken), .string(Self.container)])
        let opened = try driver.wait(for: "the sign-in popup", timeout: 15, "return window.CK.log.popupOpened || window.CK.log.error")
        let early = try driver.execute("return window.CK.log")
        XCTAssertEqual(opened, true, early.serializedString())
        let signedOut = try driver.execute("return window.CK.log")
        XCTAssertEqual(signedOut["anonymousQuery"]?["status"], 200, "performQuery on the public database with no one signed in")
        XCTAssertEqual(signedOut["setUpAuth"]?["status"], 421, signedOut.serializedString())
        XCTAssertEqual(signedOut["setUpAuth"]?["body"]?["serverErrorCode"], "AUTHENTICATION_REQUIRED")
        XCTAssertEqual(signedOut["setUpAuth"]?["body"]?["redirectURL"]?.stringValue,
                       "\(base)/signin?container=\(Self.container)&origin=http%3A%2F%2F127.0.0.1%3A\(pagePort)")

        // The sign-in button: the popup, the form, postMessage back to the page.
        try driver.signInThroughPopup(openedFrom: appWindow, name: "alice", password: "alice's web password")
        let session = try driver.wait(for: "the session from the popup", timeout: 20, "return window.CK.session")
        XCTAssertEqual(try driver.execute("return window.CK.log.signedInFrom").stringValue, base)

        // Signed in: save, fetch, query, changes, subscribe, register for notifications.
        try driver.execute(Self.signedInScript)
        let registered = try driver.wait(for: "registerForNotifications", timeout: 20, "return window.CK.log.registered || window.CK.log.error")
        let log = try driver.execute("return window.CK.log")
        XCTAssertEqual(registered, true, log.serializedString())
        XCTAssertEqual(log["current"]?["body"]?["userRecordName"]?.stringValue, alice.userRecordName, log.serializedString())
        for step in ["zone", "saved", "fetched", "queried", "databaseChanges", "zoneChanges", "subscribed", "tokensCreate"] {
            XCTAssertEqual(log[step]?["status"], 200, "\(step): \(log[step]?.serializedString() ?? "missing")")
        }
        XCTAssertEqual(log["fetched"]?["body"]?["records"]?.arrayValue?.first?["recordName"], "first-game")
        XCTAssertEqual(log["queried"]?["body"]?["records"]?.arrayValue?.count, 1)
        XCTAssertTrue(log["databaseChanges"]?["body"]?["zones"]?.arrayValue?.contains { $0["zoneID"]?["zoneName"] == "Games" } ?? false)
        XCTAssertEqual(log["zoneChanges"]?["body"]?["zones"]?.arrayValue?.first?["records"]?.arrayValue?.count, 1)

        // Every API request carried the library's parameters; the session was `null` until sign-in.
        let requests = try driver.execute("return window.CK.requests").arrayValue?.compactMap(\.stringValue) ?? []
        XCTAssertEqual(requests.count, 11, "\(requests)")
        let sessionText = try XCTUnwrap(session.stringValue)
        for (index, url) in requests.enumerated() {
            let query = APIQuery(url)
            XCTAssertEqual(query["ckjsBuildVersion"], "15GDev53", url)
            XCTAssertEqual(query["ckjsVersion"], "1.2.0", url)
            XCTAssertEqual(query["ckAPIToken"], apiToken, url)
            XCTAssertEqual(query["ckSession"], index < 2 ? "null" : sessionText, url)
        }
        XCTAssertTrue(requests.last?.contains("/device/1/\(Self.container)/development/tokens/create?") ?? false, "\(requests)")

        // Another client writes two games: exactly two callbacks, in order.
        let laptop = alice.token
        try driver.wait(for: "the first courier poll", timeout: 10, "return window.CK.polls.length > 0")
        for name in ["second-game", "third-game"] {
            let saved = try started.post("/database/1/\(Self.container)/development/private/records/modify", token: laptop, json: """
                {"zoneID": {"zoneName": "Games"}, "operations": [{"operationType": "create",
                 "record": {"recordName": "\(name)", "recordType": "Game", "fields": {"name": {"value": "\(name)"}}}}]}
                """)
            XCTAssertEqual(saved.status, 200, saved.body.serializedString())
        }
        try driver.wait(for: "two callbacks", timeout: 20, "return window.CK.callbacks.length >= 2")
        // Time for a replayed notification to show up, if the courier handed one out again.
        Thread.sleep(forTimeInterval: 2)
        let callbacks = try driver.execute("return window.CK.callbacks").arrayValue ?? []
        XCTAssertEqual(callbacks.compactMap { $0["recordName"]?.stringValue }, ["second-game", "third-game"], "\(callbacks)")
        XCTAssertEqual(callbacks.compactMap { $0["subscriptionID"]?.stringValue }, ["new-games", "new-games"])
        XCTAssertNil(try driver.execute("return window.CK.log.pollError ?? null").stringValue)

        // The courier was polled bare every time, and an idle one waits: one open poll, no more.
        let polls = try driver.execute("return window.CK.polls").arrayValue ?? []
        for poll in polls {
            let url = poll["url"]?.stringValue ?? ""
            XCTAssertFalse(url.contains("?"), "no since, no credentials: \(url)")
        }
        XCTAssertEqual(polls.count, 3, "one poll per notification and the one now waiting: \(polls.count)")
        Thread.sleep(forTimeInterval: 5)
        let idlePolls = try driver.execute("return window.CK.polls.length").int64Value ?? 0
        XCTAssertEqual(idlePolls, Int64(polls.count), "an idle courier makes no request before its poll times out (30 s)")

        // Sign-out: the session is gone again, sent as `null`, and the library asks for a user.
        try driver.execute("""
            window.CK.session = null;
            window.CK.call(window.CK.db('public', 'users/current')).then((answer) => { window.CK.log.signedOut = answer; });
            """)
        let afterSignOut = try driver.wait(for: "users/current after sign-out", timeout: 10, "return window.CK.log.signedOut")
        XCTAssertEqual(afterSignOut["status"], 421, afterSignOut.serializedString())
        XCTAssertNotNil(afterSignOut["body"]?["redirectURL"]?.stringValue)
        let last = try driver.execute("return window.CK.requests[window.CK.requests.length - 1]").stringValue ?? ""
        XCTAssertEqual(APIQuery(last)["ckSession"], "null", last)
    }
}

/// A request URL's query parameters, decoded.
private struct APIQuery {
    let items: [String: String]
    init(_ url: String) {
        items = Dictionary((URLComponents(string: url)?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }
    subscript(_ name: String) -> String? { items[name] }
}
