import Foundation
import RecordModel
import XCTest

/// The console in a real browser: headless Chromium (Debian's
/// `chromium` and `chromium-driver`, driven over WebDriver) against the real `scorebookd`, with
/// the data made by the real `scorebook` CLI. Each run's screenshot is `.build/console.png`
/// (`SCOREBOOK_UPDATE_SCREENSHOT=1` also refreshes the committed `docs/console.png`).
final class ConsoleBrowserTests: XCTestCase {
    var daemon: DaemonProcess!
    /// Daemons replaced by a restart on the same port: the first owns the data directory.
    var retiredDaemons: [DaemonProcess] = []
    var browser: WebDriver?

    override func setUpWithError() throws {
        daemon = try DaemonProcess.start()
    }

    override func tearDownWithError() throws {
        browser?.quit()
        browser = nil
        defer { retiredDaemons = [] }
        try daemon?.stop()
        daemon = nil
    }

    var consoleURL: String { "\(daemon.baseURL.absoluteString)/console" }

    // MARK: Tests

    /// The page, its script and its style sheet come from the daemon with the headers a page
    /// needs: a policy that allows no inline script, no sniffing, no referrer.
    func testConsoleIsServedWithItsSecurityHeadersAndNoInlineScript() throws {
        let page = try daemon.request("GET", "/console")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.headers["content-type"], "text/html; charset=utf-8")
        let policy = try XCTUnwrap(page.headers["content-security-policy"])
        XCTAssertTrue(policy.contains("default-src 'self'"), policy)
        XCTAssertTrue(policy.contains("script-src 'self'"), policy)
        XCTAssertTrue(policy.contains("frame-ancestors 'none'"), policy)
        XCTAssertTrue(policy.contains("form-action 'none'"), "the browser never submits the sign-in form (and its token) itself: \(policy)")
        XCTAssertFalse(policy.contains("unsafe-inline"), policy)
        XCTAssertFalse(policy.contains("unsafe-eval"), policy)
        XCTAssertEqual(page.headers["x-content-type-options"], "nosniff")
        XCTAssertEqual(page.headers["referrer-policy"], "no-referrer")
        XCTAssertEqual(page.headers["cache-control"], "no-cache")

        // Every script is a file of this daemon; no inline script, handler attribute, style or external resource.
        let html = page.text
        let scripts = try NSRegularExpression(pattern: #"<script\b([^>]*)>(.*?)</script>"#, options: [.dotMatchesLineSeparators])
            .matches(in: html, range: NSRange(html.startIndex..., in: html))
        XCTAssertEqual(scripts.count, 1, html)
        var scriptURL = ""
        for match in scripts {
            let attributes = String(html[Range(match.range(at: 1), in: html)!])
            XCTAssertEqual(String(html[Range(match.range(at: 2), in: html)!]).trimmingCharacters(in: .whitespacesAndNewlines), "")
            let source = try XCTUnwrap(attributes.range(of: #"src="([^"]+)""#, options: .regularExpression).map { String(attributes[$0]) })
            scriptURL = String(source.dropFirst(5).dropLast())
        }
        XCTAssertTrue(scriptURL.hasPrefix("/console/console.js?v="), scriptURL)
        XCTAssertNil(html.range(of: #"\son[a-z]+\s*="#, options: .regularExpression), "no event-handler attributes")
        XCTAssertNil(html.range(of: #"style\s*="#, options: .regularExpression), "no inline style attributes")
        XCTAssertNil(html.range(of: "<style"), "no inline style sheet")
        XCTAssertNil(html.range(of: "javascript:"))
        XCTAssertNil(html.range(of: #"(src|href)="(https?:)?//"#, options: .regularExpression), "nothing loaded from elsewhere")

        let script = try daemon.request("GET", scriptURL)
        XCTAssertEqual(script.status, 200)
        XCTAssertEqual(script.headers["content-type"], "text/javascript; charset=utf-8")
        XCTAssertEqual(script.headers["x-content-type-options"], "nosniff")
        XCTAssertEqual(script.headers["content-security-policy"], policy)
        XCTAssertTrue(script.headers["cache-control"]?.contains("immutable") == true)
        XCTAssertTrue(script.text.contains("Authorization"), "the script authenticates with a header")
        XCTAssertFalse(script.text.contains("ckWebAuthToken"), "the script never puts a token in a URL")
        let styleURL = try XCTUnwrap(html.range(of: #"/console/console\.css\?v=[0-9a-f]+"#, options: .regularExpression).map { String(html[$0]) })
        let style = try daemon.request("GET", styleURL)
        XCTAssertEqual(style.status, 200)
        XCTAssertEqual(style.headers["content-type"], "text/css; charset=utf-8")

        // Other paths under /console are the API's JSON 404, and the API's answers are unchanged.
        let missing = try daemon.request("GET", "/console/secret.txt")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(try missing.parsed().body["serverErrorCode"]?.stringValue, "NOT_FOUND")
        XCTAssertEqual(try daemon.request("GET", "/console/").status, 200)
        XCTAssertEqual(try daemon.request("POST", "/console").status, 404)
    }

    /// Sign in, the book, a finished match's scoreboard and rounds exactly as `scorebook match
    /// show` prints them, the standings as `scorebook standings` prints them, and each record's
    /// fields with who changed it; writes the screenshot.
    func testSignedInThePageShowsTheBookAsTheCLIDoes() throws {
        let (alice, laptop) = try user("alice")
        let (catan, chess) = try recordBook(on: laptop)
        let page = try openBrowser(width: 1400, height: 1300)
        XCTAssertEqual(try page.execute("return document.querySelectorAll('script:not([src])').length").int64Value, 0)
        try signIn(page, token: alice.token)

        try page.wait(for: "the book in the list", "return document.querySelector('[data-book=\"private/ScorebookData\"] .role')?.textContent")
        XCTAssertEqual(try page.execute("return document.querySelector('[data-book=\"private/ScorebookData\"] .role').textContent").stringValue, "owner")
        XCTAssertEqual(try page.execute("return document.getElementById('user').textContent").stringValue, "alice", "by name")
        XCTAssertEqual(try notes(page), [], "a daemon without a shared database is no error")
        XCTAssertEqual(try page.execute("return sessionStorage.getItem('scorebook.console.token')").stringValue, alice.token,
                       "the token is kept for the tab")
        try page.wait(for: "the Catan match", "return document.querySelector(`[data-record=\"\(catan)\"] table.scoreboard`)")

        for match in [catan, chess] {
            let cli = try cliScoreboard(try laptop.run("match", "show", match).stdout)
            XCTAssertEqual(try scoreboard(page, match: match), cli.rows, "scoreboard of \(match)")
            XCTAssertEqual(try cardText(page, match: match, ".winner"), cli.winner)
        }
        XCTAssertEqual(try scoreboard(page, match: catan), [["1", "Ann Lee", "12"], ["2", "Bob", "7"]])
        XCTAssertEqual(try cardText(page, match: catan, ".winner"), "winner: Ann Lee")
        XCTAssertEqual(try cardText(page, match: chess, ".winner"), "winner: none yet (in progress)")
        XCTAssertEqual(try cardText(page, match: catan, ".match-notes"), "notes: Friday")

        // Rounds: `match show --rounds` prints the grid after a blank line.
        let roundsText = try laptop.run("match", "show", catan, "--rounds").stdout
        let grid = roundsText.components(separatedBy: "\n\n").last ?? ""
        XCTAssertEqual(try pageTableWords(page, "[data-record=\"\(catan)\"] table.rounds"),
                       words(grid.split(separator: "\n").map(String.init)))
        // Standings: finished matches only, in the CLI's order and figures.
        XCTAssertEqual(try pageTableWords(page, "table.standings-table"),
                       words(try laptop.run("standings").stdout.split(separator: "\n").map(String.init)))

        // People: initials where there is no avatar; a name that looks like markup stays text.
        XCTAssertEqual(try page.execute("""
            return [...document.querySelectorAll('.people-list .person')].map((p) =>
              p.querySelector('.avatar').textContent + ' ' + p.querySelector('.name').textContent);
            """), ["B <b>Bold</b>", "AL Ann Lee", "B Bob"])
        XCTAssertEqual(try page.execute("return document.querySelectorAll('.people-list b').length").int64Value, 0)

        // Raw fields and who changed each record, when.
        try page.click("[data-record=\"\(catan)\"] details.raw-group > summary")
        let raw = try page.wait(for: "the match's records", """
            const group = document.querySelector(`[data-record="\(catan)"] details.raw-group`);
            return group && group.open && group.querySelector('.raw-record') ? group.innerText : null;
            """).stringValue ?? ""
        XCTAssertTrue(raw.contains("Player"), raw)
        XCTAssertTrue(raw.contains("Score"), raw)
        XCTAssertTrue(raw.contains("notes"), raw)
        XCTAssertTrue(raw.contains("you, "), "created/modified name the writer: \(raw)")
        XCTAssertFalse(raw.contains(alice.userRecordName), "people by name, never by record name: \(raw)")
        XCTAssertTrue(raw.contains("REFERENCE"), raw)
        try page.click("[data-record=\"\(catan)\"] details.raw-group > summary")  // closed again for the picture
        // A person's raw fields open in the picture, to show that view too.
        let ann = try XCTUnwrap(try laptop.json("person", "list").arrayValue?.first { $0["firstName"]?.stringValue == "Ann" }?["recordName"]?.stringValue)
        try page.click(".people-list [data-record=\"\(ann)\"] details > summary")
        let annFields = try page.wait(for: "Ann's fields", "return document.querySelector('.people-list [data-record=\"\(ann)\"] table.raw-fields')?.innerText")
        XCTAssertTrue(annFields.stringValue?.contains("ann@example.com") == true, annFields.serializedString())

        try page.execute("window.scrollTo(0, 0)")
        let png = try page.screenshot()
        XCTAssertEqual(Array(png.prefix(8)), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "a PNG")
        // Every run writes .build/console.png (ignored by git); SCOREBOOK_UPDATE_SCREENSHOT=1 also
        // refreshes the committed docs/console.png, so a plain test run leaves the tree clean.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        try png.write(to: root.appendingPathComponent(".build/console.png"), options: .atomic)
        if ProcessInfo.processInfo.environment["SCOREBOOK_UPDATE_SCREENSHOT"] == "1" {
            try png.write(to: root.appendingPathComponent("docs/console.png"), options: .atomic)
        }

        // A reload keeps the tab's session: the book is back without typing the token again.
        try page.navigate(to: consoleURL)
        try page.wait(for: "the book after a reload", "return document.querySelector(`[data-record=\"\(catan)\"] table.scoreboard`)")
        XCTAssertEqual(try scoreboard(page, match: catan), [["1", "Ann Lee", "12"], ["2", "Bob", "7"]])
        try waitUntilLive(page)
    }

    /// A score added and synced by the CLI shows within a second; a game deleted elsewhere
    /// disappears with a note naming it.
    func testChangesFromTheCLIArriveLiveAndADeletionLeavesANote() throws {
        let (alice, laptop) = try user("alice")
        let (catan, chess) = try recordBook(on: laptop)
        let page = try openBrowser()
        try signIn(page, token: alice.token)
        try page.wait(for: "the Chess match", "return document.querySelector(`[data-record=\"\(chess)\"] table.scoreboard`)")
        try waitUntilLive(page)

        try laptop.run("score", "add", "--match", chess, "--player", "Ann", "5")
        try laptop.sync()
        let synced = Date()
        try page.wait(for: "Ann's new total", timeout: 1, """
            const card = document.querySelector(`[data-record="\(chess)"]`);
            return card && [...card.querySelectorAll('table.scoreboard tbody tr')].some((tr) =>
              tr.querySelector('.name').textContent === 'Ann Lee' && tr.querySelector('.total').textContent === '5'
              && tr.querySelector('.rank').textContent === '1');
            """)
        let latency = Date().timeIntervalSince(synced)
        XCTAssertLessThan(latency, 1.0)
        print("console: a synced score showed on the page \(Int(latency * 1000)) ms after the sync ended")
        let cli = try cliScoreboard(try laptop.run("match", "show", chess).stdout)
        XCTAssertEqual(try scoreboard(page, match: chess), cli.rows)

        try laptop.run("game", "delete", "Chess")
        try laptop.sync()
        try page.wait(for: "the deletion note", timeout: 1, """
            return [...document.querySelectorAll('#notes .note-text')].some((n) => n.textContent.startsWith('Game “Chess” was deleted'));
            """)
        XCTAssertNil(try page.execute("return document.querySelector(`[data-record=\"\(chess)\"]`)").objectValue, "the match is gone")
        XCTAssertEqual(try notes(page), ["Game “Chess” was deleted (and 5 records that depended on it)"],
                       "one note: the match, its two players and their two scores went with the game")
        XCTAssertNotNil(try page.execute("return document.querySelector(`[data-record=\"\(catan)\"]`)").objectValue, "Catan stays")
        XCTAssertFalse(try page.execute("return [...document.querySelectorAll('.games-list .name')].map((n) => n.textContent)")
            .arrayValue?.contains("Chess") ?? true)
    }

    /// Signing in as another user shows nothing of the first user's books, and signing out
    /// forgets the token.
    func testAnotherUsersTokenShowsNothingOfTheFirst() throws {
        let (alice, laptop) = try user("alice")
        _ = try recordBook(on: laptop)
        let (bob, bobsPhone) = try user("bob")
        let page = try openBrowser()

        try signIn(page, token: bob.token)
        try page.wait(for: "bob's empty list", "return document.querySelector('#book-list .empty')?.textContent")
        var text = try pageText(page)
        for secret in ["Catan", "Ann Lee", "Chess", "Friday", alice.userRecordName] {
            XCTAssertFalse(text.contains(secret), "bob sees \(secret): \(text)")
        }

        // Bob keeps score too: he sees his book, still nothing of alice's.
        try bobsPhone.run("person", "add", "Zed")
        try bobsPhone.run("game", "add", "Go")
        try bobsPhone.sync()
        try page.wait(for: "bob's own book, live", timeout: 3, "return [...document.querySelectorAll('.games-list .name')].some((n) => n.textContent === 'Go')")
        text = try pageText(page)
        XCTAssertTrue(text.contains("Zed"))
        for secret in ["Catan", "Ann Lee", "Chess", "Friday"] { XCTAssertFalse(text.contains(secret), "bob sees \(secret)") }

        try page.click("#sign-out")
        try page.wait(for: "the sign-in form again", "return !document.getElementById('signin').hidden")
        XCTAssertEqual(try page.execute("return sessionStorage.length").int64Value, 0, "signing out forgets the token")
        XCTAssertFalse(try pageText(page).contains("Zed"))

        try signIn(page, token: alice.token)
        try page.wait(for: "alice's games", "return [...document.querySelectorAll('.games-list .name')].map((n) => n.textContent).join(',')")
        text = try pageText(page)
        XCTAssertTrue(text.contains("Catan"))
        XCTAssertFalse(text.contains("Zed"), "alice sees nothing of bob's")
    }

    /// A book shared for real: alice keeps score with the CLI and shares its
    /// zone with bob read-only over HTTP; bob accepts, and his console shows the shared book with
    /// its title, role, owner and participants and the scoreboard `scorebook match show` prints
    /// for alice; alice's next synced score reaches bob's page within a second (the shared
    /// database's subscription, `dbs` 3, notifies bob's channel); removed from the share, bob's
    /// page drops the book with a note.
    func testABookSharedOverHTTPIsLiveForItsReadOnlyParticipantUntilHeIsRemoved() throws {
        let alice = try daemon.createUserInfo("alice", email: "alice@example.com")
        let laptop = CLIMachine("alice")
        try laptop.login(daemon, token: alice.token)
        let bob = try daemon.createUserInfo("bob", email: "bob@example.com")
        let (catan, chess) = try recordBook(on: laptop)
        let database = "/database/1/iCloud.scorebook/production"
        let bookZone: JSONValue = ["zoneName": "ScorebookData"]

        // Alice shares her book with bob (read-only) and carol, who has no account yet (invited).
        func shareRecord(_ participants: [(String, String)], tag: String? = nil) -> JSONValue {
            var record: [String: JSONValue] = [
                "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "publicPermission": "NONE",
                "fields": ["cloudkit.title": ["value": "Friday games"]],
                "participants": .array(participants.map { email, permission in
                    ["type": "USER", "permission": .string(permission), "userIdentity": ["lookupInfo": ["emailAddress": .string(email)]]]
                }),
            ]
            if let tag { record["recordChangeTag"] = .string(tag) }
            return .object(record)
        }
        let shared = try daemon.post("\(database)/private/records/modify", token: alice.token, json: JSONValue.object([
            "zoneID": bookZone, "operations": [["operationType": "create", "record": shareRecord([("bob@example.com", "READ_ONLY"),
                                                                                                  ("carol@example.com", "READ_WRITE")])]],
        ]).serializedString())
        XCTAssertEqual(shared.status, 200, shared.body.serializedString())
        let guid = try XCTUnwrap(shared.body["records"]?.arrayValue?.first?["shortGUID"]?.stringValue, shared.body.serializedString())
        let accepted = try daemon.post("\(database)/public/records/accept", token: bob.token,
                                       json: JSONValue.object(["shortGUIDs": [["value": .string(guid)]]]).serializedString())
        XCTAssertEqual(accepted.body["results"]?.arrayValue?.first?["participantStatus"], "ACCEPTED", accepted.body.serializedString())

        let page = try openBrowser(width: 1400, height: 1000)
        try signIn(page, token: bob.token)
        let key = "shared/\(alice.userRecordName)/ScorebookData"
        let listed = try page.wait(for: "the shared book", """
            const item = document.querySelector(`[data-book="${arguments[0]}"]`);
            return item ? [item.querySelector('.book-title').textContent, item.querySelector('.role').textContent,
                           item.querySelector('.book-owner').textContent] : null;
            """, [.string(key)])
        XCTAssertEqual(listed, ["Friday games", "read-only", "by alice"])
        XCTAssertEqual(try notes(page), [])
        try page.click("[data-book=\"\(key)\"] button")
        try page.wait(for: "alice's Catan match", "return document.querySelector(`[data-record=\"\(catan)\"] table.scoreboard`)")
        let facts = try page.execute("return document.querySelector('.book-facts').textContent").stringValue ?? ""
        XCTAssertTrue(facts.hasPrefix("read-only owner: alice"), facts)
        XCTAssertEqual(try page.execute("return document.querySelector('.participants').textContent").stringValue,
                       "Shared with: bob (read-only, accepted), carol@example.com (read-write, invited)")
        for match in [catan, chess] {
            let cli = try cliScoreboard(try laptop.run("match", "show", match).stdout)
            XCTAssertEqual(try scoreboard(page, match: match), cli.rows, "scoreboard of \(match)")
            XCTAssertEqual(try cardText(page, match: match, ".winner"), cli.winner)
        }
        XCTAssertEqual(try cardText(page, match: catan, ".changed")?.hasPrefix("changed by alice, "), true, "the owner by name")
        try waitUntilLive(page)

        // Alice scores and syncs: bob's page shows it within a second, as alice's CLI does, woken
        // by a notification on its channel (the event's id moves the tab's cursor).
        let channelCursor = "return JSON.parse(sessionStorage.getItem('scorebook.console.channel')).cursor"
        let cursorBefore = try page.execute(channelCursor)
        try laptop.run("score", "add", "--match", chess, "--player", "Ann", "5")
        try laptop.sync()
        let synced = Date()
        try page.wait(for: "Ann's new total on bob's page", timeout: 1, """
            const card = document.querySelector(`[data-record="\(chess)"]`);
            return card && [...card.querySelectorAll('table.scoreboard tbody tr')].some((tr) =>
              tr.querySelector('.name').textContent === 'Ann Lee' && tr.querySelector('.total').textContent === '5');
            """)
        XCTAssertNotEqual(try page.execute(channelCursor), cursorBefore, "a shared-database notification reached bob's page")
        print("console: alice's synced score showed on bob's page \(Int(Date().timeIntervalSince(synced) * 1000)) ms after the sync ended")
        XCTAssertEqual(try scoreboard(page, match: chess), try cliScoreboard(try laptop.run("match", "show", chess).stdout).rows)

        // Alice removes bob (the share saved again without him): the book leaves bob's page with a note.
        let current = try daemon.post("\(database)/private/records/lookup", token: alice.token, json: JSONValue.object([
            "zoneID": bookZone, "records": [["recordName": "cloudkit.zoneshare"]],
        ]).serializedString())
        let tag = try XCTUnwrap(current.body["records"]?.arrayValue?.first?["recordChangeTag"]?.stringValue, current.body.serializedString())
        let removal = try daemon.post("\(database)/private/records/modify", token: alice.token, json: JSONValue.object([
            "zoneID": bookZone, "operations": [["operationType": "update", "record": shareRecord([("carol@example.com", "READ_WRITE")], tag: tag)]],
        ]).serializedString())
        XCTAssertNil(removal.body["records"]?.arrayValue?.first?["serverErrorCode"], removal.body.serializedString())
        try page.wait(for: "the book gone from bob's page", timeout: 8, """
            return !document.querySelector(`[data-book="${arguments[0]}"]`) && !document.querySelector(`[data-record="\(catan)"]`);
            """, [.string(key)])
        XCTAssertEqual(try notes(page), ["Book “Friday games” is no longer shared with you (or was deleted)"])
        let text = try pageText(page)
        for secret in ["Catan", "Ann Lee", "Chess"] { XCTAssertFalse(text.contains(secret), "bob still sees \(secret): \(text)") }
    }

    /// Pictures only, against a STAND-IN: the daemon does not store assets yet, so no real
    /// record has a `downloadURL`. The page's `/shared/` requests are answered by a stand-in
    /// installed in the page (the share record's shapes) whose records carry avatar and match-photo
    /// `downloadURL`s; the page must fetch them from its own origin and show initials where there
    /// is none. Shared books themselves are tested for real above.
    func testPicturesByDownloadURLAgainstAStandInSharedBook() throws {
        let (alice, _) = try user("alice")
        let page = try openBrowser()
        let owner = "_0123456789abcdef0123456789abcdef"
        let zoneID: JSONValue = ["zoneName": "Friday", "ownerRecordName": .string(owner)]
        func record(_ name: String, _ type: String, _ fields: [String: JSONValue], by user: String = owner) -> JSONValue {
            ["recordName": .string(name), "recordType": .string(type), "recordChangeTag": "1", "zoneID": zoneID,
             "fields": .object(fields),
             "created": ["timestamp": 1_763_800_000_000, "userRecordName": .string(owner), "deviceID": "d"],
             "modified": ["timestamp": 1_763_800_100_000, "userRecordName": .string(user), "deviceID": "d"]]
        }
        func ref(_ name: String) -> JSONValue { ["type": "REFERENCE", "value": ["recordName": .string(name), "action": "DELETE_SELF"]] }
        let olga: JSONValue = ["userRecordName": .string(owner), "nameComponents": ["givenName": "Olga", "familyName": "Owner"],
                               "lookupInfo": ["emailAddress": "olga@example.com"]]
        let me: JSONValue = ["participantId": "p2", "type": "USER", "permission": "READ_ONLY", "acceptanceStatus": "ACCEPTED",
                             "userIdentity": ["userRecordName": .string(alice.userRecordName), "lookupInfo": ["emailAddress": "alice@example.com"]]]
        let share = JSONValue.object([
            "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "recordChangeTag": "1", "zoneID": zoneID,
            "fields": ["cloudkit.title": ["type": "STRING", "value": "Friday games"]], "shortGUID": "abc",
            "owner": ["participantId": "p1", "type": "OWNER", "permission": "READ_WRITE", "acceptanceStatus": "ACCEPTED", "userIdentity": olga],
            "participants": [
                ["participantId": "p1", "type": "OWNER", "permission": "READ_WRITE", "acceptanceStatus": "ACCEPTED", "userIdentity": olga], me,
                ["participantId": "p3", "type": "USER", "permission": "READ_WRITE", "acceptanceStatus": "INVITED",
                 "userIdentity": ["userRecordName": "_carol", "nameComponents": ["givenName": "Carol"]]],
            ],
            "currentUserParticipant": me,
        ])
        let records: [JSONValue] = [
            record("Person|~|OLGA", "Person", ["firstName": ["type": "STRING", "value": "Olga"], "lastName": ["type": "STRING", "value": "Owner"],
                                             "avatar": ["type": "ASSETID", "value": ["fileChecksum": "x", "size": 3,
                                                                                     "downloadURL": "http://elsewhere.example:9/assets/avatar?sig=1"]]]),
            record("Person|~|CAROL", "Person", ["firstName": ["type": "STRING", "value": "Carol"]], by: "_carol"),
            record("Game|~|DARTS", "Game", ["name": ["type": "STRING", "value": "Darts"], "lowScoreWins": ["type": "INT64", "value": 1]]),
            record("Match|~|M1", "Match", ["game": ref("Game|~|DARTS"), "startDate": ["type": "TIMESTAMP", "value": 1_763_800_000_000],
                                           "endDate": ["type": "TIMESTAMP", "value": 1_763_800_900_000]], by: "_carol"),
            record("Player|~|P1", "Player", ["match": ref("Match|~|M1"), "person": ref("Person|~|OLGA"), "seat": ["type": "INT64", "value": 0]]),
            record("Player|~|P2", "Player", ["match": ref("Match|~|M1"), "person": ref("Person|~|CAROL"), "seat": ["type": "INT64", "value": 1]]),
            record("Score|~|S1", "Score", ["player": ref("Player|~|P1"), "value": ["type": "DOUBLE", "value": 30.5]]),
            record("Score|~|S2", "Score", ["player": ref("Player|~|P2"), "value": ["type": "DOUBLE", "value": 20]], by: "_carol"),
            record("MatchImage|~|I1", "MatchImage", ["match": ref("Match|~|M1"),
                                                     "image": ["type": "ASSETID", "value": ["fileChecksum": "y", "size": 9, "downloadURL": "/assets/photo?sig=2"]]],
                   by: "_carol"),
        ]
        let answers: JSONValue = [
            "zones/list": ["zones": [["zoneID": zoneID, "syncToken": "z", "atomic": true]]],
            "records/lookup": ["records": [share]],
            "changes/zone": ["zones": [["zoneID": zoneID, "syncToken": "t1", "moreComing": false, "records": .array(records)]]],
            "subscriptions/modify": ["subscriptions": [["subscriptionID": "scorebook-console", "subscriptionType": "database"]]],
        ]
        try page.execute("""
            const answers = JSON.parse(arguments[0]);
            const real = window.fetch;
            window.fetch = (url, init) => {
              const match = String(url).match(/\\/shared\\/(.+)$/);
              if (!match || !answers[match[1]]) return real(url, init);
              return Promise.resolve(new Response(JSON.stringify(answers[match[1]]), { status: 200, headers: { 'Content-Type': 'application/json' } }));
            };
            """, [.string(answers.serializedString())])
        try signIn(page, token: alice.token)

        let key = "shared/\(owner)/Friday"
        try page.wait(for: "the stand-in shared book", "return document.querySelector(`[data-book=\"${arguments[0]}\"]`)", [.string(key)])
        try page.click("[data-book=\"\(key)\"] button")
        try page.wait(for: "the Darts match", "return document.querySelector('[data-record=\"Match|~|M1\"] table.scoreboard')")
        let origin = daemon.baseURL.absoluteString
        XCTAssertEqual(try page.execute("return document.querySelector('.people-list [data-record=\"Person|~|OLGA\"] img.avatar')?.src").stringValue,
                       "\(origin)/assets/avatar?sig=1", "an avatar is fetched from the page's own origin")
        XCTAssertEqual(try page.execute("return document.querySelector('.people-list [data-record=\"Person|~|CAROL\"] .avatar.initials')?.textContent").stringValue,
                       "C", "initials without a picture")
        XCTAssertEqual(try page.execute("return document.querySelector('[data-record=\"MatchImage|~|I1\"] img')?.src").stringValue,
                       "\(origin)/assets/photo?sig=2")
        XCTAssertEqual(try page.execute("return document.querySelector('[data-record=\"MatchImage|~|I1\"] figcaption').textContent").stringValue,
                       "added by Olga Owner")
    }

    /// Real assets: an avatar and a match photo uploaded and attached over the API are shown
    /// from their download URLs (the images decode, so the bytes and the content policy are right).
    func testPicturesUploadedAsAssetsAreShown() throws {
        let (alice, laptop) = try user("alice")
        let (catan, _) = try recordBook(on: laptop)
        let zone: JSONValue = ["zoneName": "ScorebookData"]
        func api(_ operation: String, _ body: JSONValue) throws -> JSONValue {
            let answer = try daemon.post("/database/1/iCloud.scorebook/production/private/\(operation)", token: alice.token,
                                         json: body.serializedString())
            XCTAssertEqual(answer.status, 200, answer.body.serializedString())
            return answer.body
        }
        func attachable(_ record: String, _ field: String, png: String) throws -> JSONValue {
            let tokens = try api("assets/upload", ["zoneID": zone, "tokens": [["recordName": .string(record), "fieldName": .string(field)]]])
            let url = try XCTUnwrap(URLComponents(string: try XCTUnwrap(tokens["tokens"]?.arrayValue?.first?["url"]?.stringValue)))
            let uploaded = try daemon.request("POST", url.percentEncodedPath, body: Array(try XCTUnwrap(Data(base64Encoded: png)))).parsed()
            return ["type": "ASSETID", "value": try XCTUnwrap(uploaded.body["singleFile"])]
        }
        let people = try api("records/query", ["zoneID": zone, "query": ["recordType": "Person"]])["records"]?.arrayValue ?? []
        let ann = try XCTUnwrap(people.first { $0["fields"]?["firstName"]?["value"] == "Ann" })
        let annName = try XCTUnwrap(ann["recordName"]?.stringValue)
        let photoName = "MatchImage|~|\(UUID().uuidString)"
        let saved = try api("records/modify", ["zoneID": zone, "operations": [
            ["operationType": "update", "record": ["recordName": .string(annName), "recordType": "Person",
                                                   "recordChangeTag": ann["recordChangeTag"] ?? .null,
                                                   "fields": ["avatar": try attachable(annName, "avatar", png: ConsolePictures.avatarPNG)]]],
            ["operationType": "create", "record": ["recordName": .string(photoName), "recordType": "MatchImage", "fields": [
                "match": ["type": "REFERENCE", "value": ["recordName": .string(catan), "action": "DELETE_SELF"]],
                "image": try attachable(photoName, "image", png: ConsolePictures.photoPNG)]]],
        ]])
        XCTAssertEqual(saved["records"]?.arrayValue?.compactMap { $0["serverErrorCode"] }, [], saved.serializedString())

        let page = try openBrowser()
        try signIn(page, token: alice.token)
        let avatarSize = try page.wait(for: "Ann's avatar, decoded", """
            const image = document.querySelector(`.people-list [data-record="${CSS.escape(arguments[0])}"] img.avatar`);
            return image && image.complete && image.naturalWidth > 0 ? [image.naturalWidth, image.naturalHeight] : null;
            """, [.string(annName)])
        XCTAssertEqual(avatarSize, [16, 16])
        let photoSize = try page.wait(for: "the match photo, decoded", """
            const image = document.querySelector(`[data-record="${CSS.escape(arguments[0])}"] img`);
            return image && image.complete && image.naturalWidth > 0 ? [image.naturalWidth, image.naturalHeight] : null;
            """, [.string(photoName)])
        XCTAssertEqual(photoSize, [32, 24])
        XCTAssertTrue(try page.execute("return document.querySelector(`[data-record=\"${CSS.escape(arguments[0])}\"] img`).src", [.string(photoName)])
            .stringValue?.hasPrefix("\(daemon.baseURL.absoluteString)/assets/1/download/") ?? false)
    }

    /// A wrong token is refused with a plain message, and nothing is kept.
    func testAWrongTokenShowsAClearMessage() throws {
        _ = try daemon.createUser("alice")
        let page = try openBrowser()
        try page.click("#signin-button")
        XCTAssertEqual(try page.wait(for: "the empty-token message", "return document.getElementById('signin-error').textContent").stringValue,
                       "Enter a token.")
        try signIn(page, token: "not-a-real-token")
        let message = try page.wait(for: "the refusal", """
            const box = document.getElementById('signin-error');
            return !box.hidden && box.textContent.includes('not accepted') ? box.textContent : null;
            """).stringValue
        XCTAssertEqual(message, "This token was not accepted: it is unknown or has been revoked. Check it and try again.")
        XCTAssertEqual(try page.execute("return document.getElementById('console').hidden").boolValue, true)
        XCTAssertNil(try page.execute("return sessionStorage.getItem('scorebook.console.token')").stringValue)
    }

    /// The daemon stops: the page says "reconnecting…" and keeps what it showed; started again
    /// on the same port and data, the page is live again and shows changes made meanwhile and after.
    func testADaemonThatGoesAwayShowsReconnectingAndRecovers() throws {
        let (alice, laptop) = try user("alice")
        let (_, chess) = try recordBook(on: laptop)
        let page = try openBrowser()
        try signIn(page, token: alice.token)
        try page.wait(for: "the Chess match", "return document.querySelector(`[data-record=\"\(chess)\"] table.scoreboard`)")
        try waitUntilLive(page)

        let (port, directory) = (daemon.port, daemon.dataDirectory)
        try daemon.stop()
        retiredDaemons.append(daemon)
        try page.wait(for: "reconnecting", timeout: 5, "return document.getElementById('live-status').textContent === 'reconnecting…'")
        XCTAssertNotNil(try page.execute("return document.querySelector(`[data-record=\"\(chess)\"]`)").objectValue,
                        "the page keeps showing the book while the daemon is away")
        try laptop.run("score", "add", "--match", chess, "--player", "Ann", "2")  // offline: queued

        try restartOnTheSamePort(port: port, directory: directory)
        try waitUntilLive(page, timeout: 10)
        try laptop.sync()
        try page.wait(for: "the score made while away", timeout: 2, """
            const card = document.querySelector(`[data-record="\(chess)"]`);
            return card && [...card.querySelectorAll('table.scoreboard tbody tr')].some((tr) =>
              tr.querySelector('.name').textContent === 'Ann Lee' && tr.querySelector('.total').textContent === '2');
            """)
        XCTAssertEqual(try scoreboard(page, match: chess), try cliScoreboard(try laptop.run("match", "show", chess).stdout).rows)
    }
}

/// Small real PNGs (a 16×16 red square, a 32×24 blue one) for the pictures test.
enum ConsolePictures {
    static let avatarPNG = "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR4nGM4oaFBEmIY1TCqYfhqAAB8MxgQ+Pjr0gAAAABJRU5ErkJggg=="
    static let photoPNG = "iVBORw0KGgoAAAANSUhEUgAAACAAAAAYCAIAAAAUMWhjAAAAJElEQVR4nGPQqDhBU8QwasGoBaMWjFowasGoBaMWjFowNCwAAOi7OD0hBg5wAAAAAElFTkSuQmCC"
}
