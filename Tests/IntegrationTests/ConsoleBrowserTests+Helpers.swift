import Foundation
import RecordModel
import XCTest

/// What the console's browser tests share: the browser, the users and their books, reading the
/// page, and restarting the daemon under it.
extension ConsoleBrowserTests {
    func openBrowser(width: Int = 1280, height: Int = 900) throws -> WebDriver {
        try WebDriver.requireBrowser()
        let started = try WebDriver.start(width: width, height: height)
        browser = started
        try started.navigate(to: consoleURL)
        return started
    }

    /// A user with a CLI machine logged in as them.
    func user(_ name: String) throws -> (info: (userRecordName: String, token: String), machine: CLIMachine) {
        let info = try daemon.createUserInfo(name)
        let machine = CLIMachine(name)
        try machine.login(daemon, token: info.token)
        return (info, machine)
    }

    /// Catan (Ann Lee wins 12 to 7 over three rounds, finished), a match of Chess in progress,
    /// and a person whose name looks like markup. Returns the two matches' record names.
    func recordBook(on machine: CLIMachine) throws -> (catan: String, chess: String) {
        try machine.run("person", "add", "Ann", "Lee", "--email", "ann@example.com")
        try machine.run("person", "add", "Bob")
        try machine.run("person", "add", "<b>Bold</b>")
        try machine.run("game", "add", "Catan")
        try machine.run("game", "add", "Chess")
        let catan = try machine.create("match", "start", "--game", "Catan", "--players", "Ann,Bob", "--notes", "Friday",
                                       "--date", "2026-11-20T19:30:00Z")
        for (player, value, round) in [("Ann", "4", "1"), ("Bob", "3", "1"), ("Ann", "6.5", "2"), ("Bob", "4", "2"), ("Ann", "1.5", "3")] {
            try machine.run("score", "add", "--match", catan, "--player", player, value, "--round", round)
        }
        try machine.run("match", "finish", catan)
        let chess = try machine.create("match", "start", "--game", "Chess", "--players", "Bob,Ann", "--date", "2026-11-21T18:00:00Z")
        try machine.run("score", "add", "--match", chess, "--player", "Bob", "1")
        try machine.sync()
        return (catan, chess)
    }

    /// Types the token and signs in, as a person would.
    func signIn(_ page: WebDriver, token: String) throws {
        try page.wait(for: "the sign-in form", "return !document.getElementById('signin').hidden")
        try page.type(token, into: "#token")
        try page.click("#signin-button")
    }

    func waitUntilLive(_ page: WebDriver, timeout: TimeInterval = 10) throws {
        try page.wait(for: "the live badge", timeout: timeout, "return document.getElementById('live-status').dataset.state === 'live'")
    }

    /// Each scoreboard row of a match card: rank, player, total, as shown.
    func scoreboard(_ page: WebDriver, match: String) throws -> [[String]] {
        let rows = try page.execute("""
            const card = document.querySelector(`[data-record="${CSS.escape(arguments[0])}"]`);
            if (!card) return null;
            return [...card.querySelectorAll('table.scoreboard tbody tr')].map((tr) =>
              [tr.querySelector('.rank').textContent, tr.querySelector('.player .name').textContent, tr.querySelector('.total').textContent]);
            """, [.string(match)])
        return (rows.arrayValue ?? []).map { ($0.arrayValue ?? []).compactMap(\.stringValue) }
    }

    func cardText(_ page: WebDriver, match: String, _ selector: String) throws -> String? {
        try page.execute("""
            const card = document.querySelector(`[data-record="${CSS.escape(arguments[0])}"]`);
            const node = card && card.querySelector(arguments[1]);
            return node ? node.textContent : null;
            """, [.string(match), .string(selector)]).stringValue
    }

    /// `match show`'s text: the rows of its RANK/PLAYER/TOTAL table (cut at the header's column
    /// offsets) and its `winner:` line.
    func cliScoreboard(_ text: String) throws -> (rows: [[String]], winner: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let headerIndex = lines.firstIndex(where: { $0.hasPrefix("RANK") }),
              let player = lines[headerIndex].range(of: "PLAYER")?.lowerBound, let total = lines[headerIndex].range(of: "TOTAL")?.lowerBound
        else { throw DaemonError("no scoreboard in:\n\(text)") }
        let header = lines[headerIndex]
        let playerOffset = header.distance(from: header.startIndex, to: player)
        let totalOffset = header.distance(from: header.startIndex, to: total)
        var rows: [[String]] = []
        var winner = ""
        for line in lines[(headerIndex + 1)...] {
            if line.hasPrefix("winner:") {
                winner = line
                break
            }
            let characters = Array(line)
            func cut(_ from: Int, _ to: Int) -> String {
                String(characters[min(from, characters.count)..<min(to, characters.count)]).trimmingCharacters(in: .whitespaces)
            }
            rows.append([cut(0, playerOffset), cut(playerOffset, totalOffset), cut(totalOffset, characters.count)])
        }
        return (rows, winner)
    }

    /// A table's rows as whitespace-separated words (how the CLI's padded columns and the page's
    /// cells compare).
    func words(_ rows: [String]) -> [[String]] {
        rows.map { $0.split(whereSeparator: \.isWhitespace).map(String.init) }.filter { !$0.isEmpty }
    }

    func pageTableWords(_ page: WebDriver, _ selector: String) throws -> [[String]] {
        let rows = try page.execute("""
            const table = document.querySelector(arguments[0]);
            if (!table) return null;
            return [...table.querySelectorAll('tr')].map((tr) => [...tr.children].map((cell) => {
              const name = cell.querySelector('.name');
              return (name ? name.textContent : cell.textContent).trim();
            }).join('  '));
            """, [.string(selector)])
        return words((rows.arrayValue ?? []).compactMap(\.stringValue))
    }

    func notes(_ page: WebDriver) throws -> [String] {
        (try page.execute("return [...document.querySelectorAll('#notes .note-text')].map((n) => n.textContent)").arrayValue ?? [])
            .compactMap(\.stringValue)
    }

    /// The whole page's visible text.
    func pageText(_ page: WebDriver) throws -> String {
        try page.execute("return document.body.innerText").stringValue ?? ""
    }

    /// Starts the stopped daemon again on its data directory and port (retrying while the port
    /// is briefly busy), so the page's origin reaches it again.
    func restartOnTheSamePort(port: Int, directory: URL) throws {
        var failure: Error?
        for _ in 0..<20 {
            do {
                daemon = try DaemonProcess.start(dataDirectory: directory, extraArguments: ["--port", String(port)])
                return
            } catch {
                failure = error
                Thread.sleep(forTimeInterval: 0.25)
            }
        }
        throw failure ?? DaemonError("could not restart on port \(port)")
    }
}
