import Foundation
import RecordModel
import XCTest

/// Invitations in the console, and its layout, in headless Chromium against the real daemon: a
/// friend opens the share link, signs in with a password, finds the invitation waiting, accepts it
/// and follows the owner's scores live; declining takes it away and the owner sees the answer;
/// names never break inside a word, and a phone-sized window never scrolls sideways.
extension ConsoleBrowserTests {
    static let database = "/database/1/iCloud.scorebook/production"

    /// Alice shares her book `ScorebookData` with `participants` (email, permission) over HTTP;
    /// returns the share link's shortGUID and path.
    func share(as alice: String, with participants: [(String, String)]) throws -> (guid: String, path: String) {
        let record: JSONValue = [
            "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "publicPermission": "NONE",
            "fields": ["cloudkit.title": ["value": "Friday games"]],
            "participants": .array(participants.map { email, permission in
                ["type": "USER", "permission": .string(permission), "userIdentity": ["lookupInfo": ["emailAddress": .string(email)]]]
            }),
        ]
        let shared = try daemon.post("\(Self.database)/private/records/modify", token: alice, json: JSONValue.object([
            "zoneID": ["zoneName": "ScorebookData"], "operations": [["operationType": "create", "record": record]],
        ]).serializedString())
        XCTAssertEqual(shared.status, 200, shared.body.serializedString())
        let saved = shared.body["records"]?.arrayValue?.first
        let guid = try XCTUnwrap(saved?["shortGUID"]?.stringValue, shared.body.serializedString())
        let path = try XCTUnwrap(URL(string: saved?["url"]?.stringValue ?? "")?.path, shared.body.serializedString())
        return (guid, path)
    }

    /// Signs in through the console's password popup, as a person does.
    func signInWithPassword(_ page: WebDriver, name: String, password: String) throws {
        let console = try page.command("GET", "/window")
        try page.wait(for: "the console's sign-in", "return !document.getElementById('signin').hidden")
        try page.click("#signin-password")
        try page.signInThroughPopup(openedFrom: console, name: name, password: password)
        try page.wait(for: "signed in", timeout: 20, "return document.getElementById('signin').hidden")
    }

    /// The page's visible text holds no user record name (`_` and 32 hex digits).
    func assertNoRecordNames(_ page: WebDriver, _ context: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let text = try pageText(page)
        XCTAssertNil(text.range(of: #"_[0-9a-f]{32}"#, options: .regularExpression), "\(context): \(text)", file: file, line: line)
    }

    func testAFriendAcceptsFromTheShareLinkAndFollowsTheOwnersScoresLive() throws {
        let alice = try daemon.createUserInfo("alice", email: "alice@example.com")
        let laptop = CLIMachine("alice")
        try laptop.login(daemon, token: alice.token)
        _ = try daemon.createUserInfo("bob", email: "bob@example.com")
        XCTAssertEqual(try daemon.setPassword("bob", input: "bob's console password\n").status, 0)
        let (_, chess) = try recordBook(on: laptop)
        let (guid, link) = try share(as: alice.token, with: [("bob@example.com", "READ_WRITE")])

        // The share link in a browser: a page that leads to the console, onto this invitation.
        let page = try openBrowser()
        try page.navigate(to: "\(daemon.baseURL.absoluteString)\(link)")
        let target = try page.wait(for: "the share page's console link", """
            const link = document.getElementById('console-link');
            return link && link.getAttribute('href') !== '/console' ? link.getAttribute('href') : null;
            """)
        XCTAssertEqual(target.stringValue, "/console#invitation=\(guid)")
        try page.click("#console-link")
        try signInWithPassword(page, name: "bob", password: "bob's console password")

        let shown = try page.wait(for: "the invitation, waiting", timeout: 10, """
            const item = document.querySelector(`[data-invitation="${arguments[0]}"]`);
            return item ? [item.className, item.querySelector('.invitation-title').textContent, item.querySelector('.role').textContent,
                           item.querySelector('.invitation-owner').textContent, document.activeElement.textContent] : null;
            """, [.string(guid)])
        XCTAssertEqual(shown, ["invitation linked", "Friday games", "read-write", "from alice", "Accept"], "the link's invitation, ready to accept")
        XCTAssertEqual(try page.execute("return document.getElementById('user').textContent").stringValue, "bob")
        try assertNoRecordNames(page, "before accepting")

        try page.click("[data-invitation=\"\(guid)\"] button.accept")
        let key = "shared/\(alice.userRecordName)/ScorebookData"
        let listed = try page.wait(for: "the accepted book beside bob's own", timeout: 10, """
            const item = document.querySelector(`[data-book="${arguments[0]}"]`);
            return item ? [item.querySelector('.book-title').textContent, item.querySelector('.role').textContent,
                           item.querySelector('.shared-mark')?.textContent, item.querySelector('.book-owner').textContent] : null;
            """, [.string(key)])
        XCTAssertEqual(listed, ["Friday games", "read-write", "shared", "by alice"])
        XCTAssertTrue(try page.execute("return document.getElementById('invitations').hidden").boolValue ?? false, "answered: no longer pending")
        XCTAssertEqual(try page.execute("return window.scorebookConsole.openBook").stringValue, key, "the joined book opens")
        try page.wait(for: "alice's Chess match", timeout: 10, "return document.querySelector(`[data-record=\"\(chess)\"] table.scoreboard`)")
        try waitUntilLive(page)
        let joinedNotes = try notes(page)
        XCTAssertTrue(joinedNotes.contains("You joined “Friday games”"), "\(joinedNotes)")

        // Alice scores: bob's page shows it, live.
        try laptop.run("score", "add", "--match", chess, "--player", "Ann", "5")
        try laptop.sync()
        try page.wait(for: "Ann's new total on bob's page", timeout: 5, """
            const card = document.querySelector(`[data-record="\(chess)"]`);
            return card && [...card.querySelectorAll('table.scoreboard tbody tr')].some((tr) =>
              tr.querySelector('.name').textContent === 'Ann Lee' && tr.querySelector('.total').textContent === '5');
            """)
        XCTAssertEqual(try cardText(page, match: chess, ".changed")?.hasPrefix("changed by alice, "), true)
        try assertNoRecordNames(page, "the shared book")
    }

    func testDecliningRemovesTheInvitationAndTheOwnerSeesWhoTheBookIsSharedWith() throws {
        let alice = try daemon.createUserInfo("alice", email: "alice@example.com")
        let laptop = CLIMachine("alice")
        try laptop.login(daemon, token: alice.token)
        let bob = try daemon.createUserInfo("bob", email: "bob@example.com")
        _ = try daemon.createUserInfo("carol", email: "carol@example.com")
        _ = try recordBook(on: laptop)
        let (guid, _) = try share(as: alice.token, with: [("bob@example.com", "READ_ONLY"), ("carol@example.com", "READ_WRITE")])

        let page = try openBrowser()
        try signIn(page, token: bob.token)
        try page.wait(for: "bob's invitation", timeout: 10, "return document.querySelector(`[data-invitation=\"\(guid)\"] .role`)?.textContent")
        XCTAssertEqual(try page.execute("return document.querySelector('[data-invitation] .role').textContent").stringValue, "read-only")
        try page.click("[data-invitation=\"\(guid)\"] button.decline")
        try page.wait(for: "the invitation gone", timeout: 10, "return !document.querySelector('[data-invitation]')")
        let declinedNotes = try notes(page)
        XCTAssertTrue(declinedNotes.contains("You declined “Friday games”"), "\(declinedNotes)")
        XCTAssertNil(try page.execute("return document.querySelector('[data-book^=\"shared/\"]')").objectValue, "no shared book")
        // Gone for good: a new page load lists it no more.
        try page.navigate(to: consoleURL)
        try page.wait(for: "bob's books again", timeout: 10, "return window.scorebookConsole.liveState === 'live'")
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(try page.execute("return window.scorebookConsole.invitations").arrayValue?.count, 0)
        let listed = try daemon.post("\(Self.database)/shared/invitations/list", token: bob.token, json: "{}")
        XCTAssertEqual(listed.body["invitations"]?.arrayValue?.count, 0, listed.body.serializedString())

        // Alice's console: who her book is shared with, and how each answered, by name.
        try page.click("#sign-out")
        try signIn(page, token: alice.token)
        let sharedWith = try page.wait(for: "alice's book shared with", timeout: 10,
                                       "return document.querySelector('.participants')?.textContent")
        XCTAssertEqual(sharedWith.stringValue, "Shared with: bob (read-only, declined), carol (read-write, invited)")
        XCTAssertEqual(try page.execute("return document.querySelector('[data-book=\"private/ScorebookData\"] .shared-mark')?.textContent").stringValue,
                       "shared")
        try assertNoRecordNames(page, "the owner's view")
    }

    func testTheLayoutKeepsNamesWholeAndFitsAPhone() throws {
        let (alice, laptop) = try user("alice")
        try laptop.run("person", "add", "Ada", "Lovelace")
        try laptop.run("person", "add", "Grace", "Hopper")
        try laptop.run("person", "add", "Maximiliane", "Wolkenkratzerbewohnerin")
        try laptop.run("game", "add", "Go")
        let match = try laptop.create("match", "start", "--game", "Go", "--players", "Ada,Grace,Maximiliane")
        for (player, value) in [("Ada", "12"), ("Grace", "9"), ("Maximiliane", "4")] {
            try laptop.run("score", "add", "--match", match, "--player", player, value)
        }
        try laptop.run("match", "finish", match)
        try laptop.sync()
        // A book of one record, to read its count.
        try createOneRecordBook(token: alice.token)

        let page = try openBrowser(width: 1280, height: 900)
        try signIn(page, token: alice.token)
        try page.wait(for: "the standings", timeout: 10, "return document.querySelectorAll('.standings-table td.player .name').length === 3")
        let broken = try page.execute("""
            return [...document.querySelectorAll('.standings-table td.player .name, table.scoreboard td.player .name')].flatMap((name) => {
              const text = name.firstChild;
              const split = [];
              for (const word of text.data.matchAll(/\\S+/g)) {
                const range = document.createRange();
                range.setStart(text, word.index);
                range.setEnd(text, word.index + word[0].length);
                if (new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size > 1) split.push(word[0]);
              }
              return split;
            });
            """)
        XCTAssertEqual(broken.arrayValue?.count, 0, "words broken across lines at 1280 px: \(broken.serializedString())")

        try page.click("[data-book=\"private/Solo\"] button")
        let facts = try page.wait(for: "the one-record book", timeout: 10, """
            const facts = document.querySelector('.book-facts');
            return facts && facts.textContent.includes('zone Solo') ? facts.textContent : null;
            """)
        XCTAssertTrue(facts.stringValue?.hasSuffix("· 1 record") ?? false, facts.serializedString())

        // A phone: nothing wider than the window, and Sign out in view.
        try page.setWindowSize(width: 390, height: 844)
        try page.click("[data-book=\"private/ScorebookData\"] button")
        try page.wait(for: "the book at 390 px", timeout: 10, "return window.innerWidth <= 400 && document.querySelector('.standings-table')")
        let fit = try page.execute("""
            const signOut = document.getElementById('sign-out').getBoundingClientRect();
            return { width: window.innerWidth, scrollWidth: document.documentElement.scrollWidth, bodyWidth: document.body.scrollWidth,
                     signOutLeft: signOut.left, signOutRight: signOut.right, signOutWidth: signOut.width };
            """)
        let width = try XCTUnwrap(fit["width"]?.doubleValue, fit.serializedString())
        XCTAssertLessThanOrEqual(fit["scrollWidth"]?.doubleValue ?? .infinity, width, "no sideways scroll: \(fit.serializedString())")
        XCTAssertLessThanOrEqual(fit["bodyWidth"]?.doubleValue ?? .infinity, width, fit.serializedString())
        XCTAssertGreaterThan(fit["signOutWidth"]?.doubleValue ?? 0, 0)
        XCTAssertGreaterThanOrEqual(fit["signOutLeft"]?.doubleValue ?? -1, 0, "Sign out on screen: \(fit.serializedString())")
        XCTAssertLessThanOrEqual(fit["signOutRight"]?.doubleValue ?? .infinity, width, "Sign out on screen: \(fit.serializedString())")
    }

    /// A zone `Solo` holding exactly one record, over HTTP.
    func createOneRecordBook(token: String) throws {
        let zone = try daemon.post("\(Self.database)/private/zones/modify", token: token,
                                   json: #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Solo"}}}]}"#)
        XCTAssertEqual(zone.status, 200, zone.body.serializedString())
        let saved = try daemon.post("\(Self.database)/private/records/modify", token: token, json: """
            {"zoneID": {"zoneName": "Solo"}, "operations": [{"operationType": "create",
             "record": {"recordName": "Game|~|SOLO", "recordType": "Game", "fields": {"name": {"value": "Solitaire"}}}}]}
            """)
        XCTAssertEqual(saved.status, 200, saved.body.serializedString())
    }
}
