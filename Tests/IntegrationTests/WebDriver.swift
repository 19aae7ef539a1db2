import Foundation
import TestSupport
import RecordModel
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Headless Chromium driven over the W3C WebDriver protocol: a `chromedriver` process of its own
/// on a free loopback port, spoken to with plain HTTP/1.1 and JSON (`RawHTTP`), so the browser
/// tests need nothing from PyPI.
///
/// ```swift
/// let browser = try WebDriver.start()
/// try browser.navigate(to: "http://127.0.0.1:8080/console")
/// let title = try browser.execute("return document.title")
/// ```
///
/// Every call is bounded; the session and the driver (and with it Chromium) end when the object goes.
final class WebDriver {
    /// Debian's `chromium` and `chromium-driver`; `SCOREBOOK_CHROMIUM` and `SCOREBOOK_CHROMEDRIVER` override.
    static var browserPath: String { ProcessInfo.processInfo.environment["SCOREBOOK_CHROMIUM"] ?? "/usr/bin/chromium" }
    static var driverPath: String { ProcessInfo.processInfo.environment["SCOREBOOK_CHROMEDRIVER"] ?? "/usr/bin/chromedriver" }

    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: browserPath) && FileManager.default.isExecutableFile(atPath: driverPath)
    }

    /// Skips the calling test when the browser is missing and `SCOREBOOK_SKIP_BROWSER_TESTS=1`
    /// says that is expected (a developer machine); fails it otherwise, since CI must run it.
    static func requireBrowser(file: StaticString = #filePath, line: UInt = #line) throws {
        guard !isAvailable else { return }
        let message = "Chromium or chromedriver is missing (\(browserPath), \(driverPath)): run scripts/install-deps.sh "
            + "(apt-get install chromium chromium-driver)"
        if ProcessInfo.processInfo.environment["SCOREBOOK_SKIP_BROWSER_TESTS"] == "1" {
            throw XCTSkip("\(message); skipped because SCOREBOOK_SKIP_BROWSER_TESTS=1")
        }
        XCTFail("\(message), or set SCOREBOOK_SKIP_BROWSER_TESTS=1 to skip the browser tests", file: file, line: line)
        throw DaemonError(message)
    }

    /// W3C's key for an element reference in JSON.
    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    let port: Int
    let sessionID: String
    private let driver: Process
    private let driverOutput: PipeCollector
    /// Chromium's profile, made for this session: its path on their command lines tells this
    /// session's browser processes from any other.
    private let profile: URL

    private init(port: Int, sessionID: String, driver: Process, driverOutput: PipeCollector, profile: URL) {
        self.port = port
        self.sessionID = sessionID
        self.driver = driver
        self.driverOutput = driverOutput
        self.profile = profile
    }

    deinit { quit() }

    /// Starts chromedriver and a headless Chromium session with a window of `width`×`height`.
    static func start(width: Int = 1280, height: Int = 900) throws -> WebDriver {
        var lastError: Error?
        // A free port can be taken between finding it and chromedriver binding it: try again.
        for _ in 0..<3 {
            let port = try PostgresTestCluster.freePort()  // a loopback port nobody listens on
            let profile = DaemonProcess.makeTemporaryDirectory(prefix: "scorebook-chromium")
            let driver = Process()
            driver.executableURL = URL(fileURLWithPath: driverPath)
            driver.arguments = ["--port=\(port)"]  // local connections only, by default
            let output = Pipe()
            driver.standardOutput = output
            driver.standardError = output
            driver.standardInput = FileHandle.nullDevice
            try driver.run()
            let collector = PipeCollector(output.fileHandleForReading)
            do {
                try waitUntilReady(port: port, driver: driver)
                let capabilities: JSONValue = [
                    "capabilities": ["alwaysMatch": [
                        "browserName": "chrome",
                        "goog:chromeOptions": [
                            "binary": .string(browserPath),
                            // As root Chromium needs --no-sandbox; /dev/shm is small in containers.
                            "args": [
                                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                                .string("--user-data-dir=\(profile.path)"),
                                .string("--window-size=\(width),\(height)"), "--hide-scrollbars", "--force-device-scale-factor=1",
                            ],
                        ],
                        "timeouts": ["script": 10_000, "pageLoad": 20_000, "implicit": 0],
                    ]],
                ]
                let answer = try call(port: port, "POST", "/session", capabilities, timeout: 60)
                guard let sessionID = answer["sessionId"]?.stringValue else {
                    throw DaemonError("chromedriver made no session: \(answer.serializedString().prefix(500))")
                }
                return WebDriver(port: port, sessionID: sessionID, driver: driver, driverOutput: collector, profile: profile)
            } catch {
                lastError = DaemonError("\(error); chromedriver said: \(collector.text.suffix(2000))")
                if driver.isRunning { sendSignal(driver.processIdentifier, SIGKILL) }
                driver.waitUntilExit()
                endBrowsers(using: profile)
            }
        }
        throw lastError ?? DaemonError("chromedriver did not start")
    }

    private static func waitUntilReady(port: Int, driver: Process) throws {
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            guard driver.isRunning else { throw DaemonError("chromedriver exited with \(driver.terminationStatus)") }
            if let answer = try? exchange(port: port, method: "GET", path: "/status", headers: [], body: [], timeout: 2),
               answer.status == 200, (try? JSONValue.parse(answer.body))?["value"]?["ready"]?.boolValue == true
            {
                return
            }
            usleep(50_000)
        }
        throw DaemonError("chromedriver was not ready on port \(port) within 15 s")
    }

    /// One WebDriver command: the answer's `value`, or an error naming WebDriver's error and message.
    @discardableResult
    static func call(port: Int, _ method: String, _ path: String, _ body: JSONValue? = nil, timeout: TimeInterval = 30) throws -> JSONValue {
        let bytes = body.map { Array($0.serializedString().utf8) } ?? []
        let headers = body == nil ? [] : [("Content-Type", "application/json; charset=utf-8")]
        let answer = try exchange(port: port, method: method, path: path, headers: headers, body: bytes, timeout: timeout)
        let json: JSONValue
        do {
            json = try JSONValue.parse(answer.body)
        } catch {
            throw DaemonError("WebDriver \(method) \(path) answered HTTP \(answer.status) without JSON: \(answer.text.prefix(300))")
        }
        let value = json["value"] ?? .null
        guard answer.status == 200 else {
            let kind = value["error"]?.stringValue ?? "HTTP \(answer.status)"
            throw DaemonError("WebDriver \(method) \(path): \(kind): \(value["message"]?.stringValue?.prefix(800) ?? "")")
        }
        return value
    }

    /// One HTTP/1.1 request and its answer, read up to its `Content-Length`. Not `RawHTTP.send`:
    /// chromedriver drops a request whose sender half-closes the connection, and keeps the
    /// connection open after answering even when asked to close it.
    static func exchange(port: Int, method: String, path: String, headers: [(String, String)], body: [UInt8],
                         timeout: TimeInterval) throws -> HTTPAnswer
    {
        let fd = try RawHTTP.connectLoopback(port: port, sendTimeout: timeout, receiveTimeout: timeout)
        defer { close(fd) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        var sent = 0
        while sent < request.count {
            let written = request[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw DaemonError("cannot send to chromedriver on port \(port): errno \(errno)") }
            sent += written
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let separator: [UInt8] = [13, 10, 13, 10]
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let end = received.indices.dropLast(3).first(where: { received[$0..<$0 + 4].elementsEqual(separator) }) {
                let head = String(decoding: received[..<end], as: UTF8.self).lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
                if let length, received.count >= end + 4 + length { return try RawHTTP.parse(Array(received[..<(end + 4 + length)])) }
            }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received.append(contentsOf: buffer[0..<count])
            } else if count == 0 {
                return try RawHTTP.parse(received)  // closed: whatever came is the answer
            } else if errno != EINTR {
                throw DaemonError("no answer from chromedriver on port \(port) (errno \(errno))")
            }
        }
        throw DaemonError("chromedriver on port \(port) did not answer \(method) \(path) within \(Int(timeout)) s")
    }

    @discardableResult
    func command(_ method: String, _ path: String, _ body: JSONValue? = nil, timeout: TimeInterval = 30) throws -> JSONValue {
        try WebDriver.call(port: port, method, "/session/\(sessionID)\(path)", body, timeout: timeout)
    }

    func navigate(to url: String) throws {
        try command("POST", "/url", ["url": .string(url)])
    }

    /// Runs `script` (a function body; `arguments[0]`… are `arguments`) in the page and answers its result.
    @discardableResult
    func execute(_ script: String, _ arguments: [JSONValue] = []) throws -> JSONValue {
        try command("POST", "/execute/sync", ["script": .string(script), "args": .array(arguments)])
    }

    /// Polls `script` every 25 ms until it answers something other than null, false, 0 or "",
    /// and answers that; throws, with `description` and what the page shows, after `timeout`.
    @discardableResult
    func wait(for description: String, timeout: TimeInterval = 5, _ script: String, _ arguments: [JSONValue] = []) throws -> JSONValue {
        let deadline = Date().addingTimeInterval(timeout)
        var last: JSONValue = .null
        repeat {
            last = try execute(script, arguments)
            switch last {
            case .null, .bool(false), .int(0), .string(""): break
            default: return last
            }
            usleep(25_000)
        } while Date() < deadline
        let page = (try? execute("return document.body ? document.body.innerText : ''"))?.stringValue ?? ""
        throw DaemonError("timed out after \(timeout) s waiting for \(description) (last answer \(last.serializedString().prefix(200))); the page shows:\n\(page.prefix(3000))")
    }

    /// The first element matching a CSS selector.
    func element(_ selector: String) throws -> String {
        let found = try command("POST", "/element", ["using": "css selector", "value": .string(selector)])
        guard let id = found[WebDriver.elementKey]?.stringValue else { throw DaemonError("no element id in \(found.serializedString())") }
        return id
    }

    func click(_ selector: String) throws {
        try command("POST", "/element/\(try element(selector))/click", [:])
    }

    /// Types `text` into the element, as a person would.
    func type(_ text: String, into selector: String) throws {
        try command("POST", "/element/\(try element(selector))/value", ["text": .string(text)])
    }

    /// Signs in through the daemon's sign-in popup that a page in window `opener` has opened: waits
    /// for the popup, fills its form as a person does, and goes back to the opener (the popup closes
    /// itself once it has posted the token).
    func signInThroughPopup(openedFrom opener: JSONValue, name: String, password: String) throws {
        var popup: JSONValue?
        for _ in 0..<200 where popup == nil {
            popup = (try command("GET", "/window/handles").arrayValue ?? []).first { $0 != opener }
            if popup == nil { usleep(25_000) }
        }
        try command("POST", "/window", ["handle": try XCTUnwrap(popup, "no popup opened")])
        try wait(for: "the sign-in form", timeout: 15, "return document.querySelector('input[name=password]') !== null")
        try type(name, into: "input[name=name]")
        try type(password, into: "input[name=password]")
        try click("button[type=submit]")
        try command("POST", "/window", ["handle": opener])
    }

    func setWindowSize(width: Int, height: Int) throws {
        try command("POST", "/window/rect", ["width": .int(Int64(width)), "height": .int(Int64(height))])
    }

    /// The viewport as PNG bytes.
    func screenshot() throws -> Data {
        let encoded = try command("GET", "/screenshot", nil, timeout: 60)
        guard let text = encoded.stringValue, let data = Data(base64Encoded: text) else {
            throw DaemonError("screenshot was not base64")
        }
        return data
    }

    /// Ends the session and the driver, and any of this session's browser processes still
    /// running. Safe to call twice.
    func quit() {
        if driver.isRunning {
            _ = try? WebDriver.call(port: port, "DELETE", "/session/\(sessionID)", nil, timeout: 10)
            sendSignal(driver.processIdentifier, SIGTERM)
            if !DaemonProcess.waitForExit(driver, timeout: 5) {
                sendSignal(driver.processIdentifier, SIGKILL)
                driver.waitUntilExit()
            }
        }
        WebDriver.endBrowsers(using: profile)
    }

    /// Kills, by process id, the Chromium processes started with `profile` (a session that
    /// failed half-way leaves its browser behind when the driver goes), then removes the profile.
    static func endBrowsers(using profile: URL) {
        let marker = Array("--user-data-dir=\(profile.path)".utf8)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry), pid != getpid(),
                  let commandLine = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { continue }
            let bytes = Array(commandLine)
            if bytes.count >= marker.count, (0...(bytes.count - marker.count)).contains(where: { bytes[$0..<$0 + marker.count].elementsEqual(marker) }) {
                sendSignal(pid, SIGKILL)
            }
        }
        try? FileManager.default.removeItem(at: profile)
    }
}
