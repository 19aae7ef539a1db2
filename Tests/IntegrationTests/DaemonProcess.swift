import Foundation
import RecordModel
import Synchronization
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc

/// `kill(2)`, named apart from `DaemonProcess.kill()`.
func sendSignal(_ pid: pid_t, _ signal: Int32) { _ = Glibc.kill(pid, signal) }
#endif

/// Runs the real `scorebookd serve --data-dir D --port 0` for integration tests.
///
/// ```swift
/// let daemon = try DaemonProcess.start()
/// let token = try daemon.createUser("alice")
/// let answer = try daemon.post("/database/1/iCloud.x/development/private/zones/list", token: token, json: "{}")
/// try daemon.stop()  // SIGTERM; throws unless the daemon exits 0
/// ```
///
/// Every wait is bounded; the process is killed when the object goes away, and a data directory
/// the harness made itself is removed then.
final class DaemonProcess: Sendable {
    /// How long `start` waits for the readiness line.
    static let readinessTimeout: TimeInterval = 20
    /// How long `stop` waits for a graceful exit (the contract allows 10 s for in-flight requests).
    static let shutdownTimeout: TimeInterval = 15
    /// The exact readiness line, `scorebookd listening on http://HOST:PORT`.
    static let readinessPattern = #"^scorebookd listening on http://(127\.0\.0\.1|\[::1\]|localhost|[0-9.]+):([0-9]{1,5})$"#

    let dataDirectory: URL
    /// The PostgreSQL store the daemon serves instead of `dataDirectory` (`--database URL`).
    let postgresURL: String?
    /// `--data-dir DIR` or `--database URL`: the store, as `serve` and the admin commands name it.
    var storeArguments: [String] { postgresURL.map { ["--database", $0] } ?? ["--data-dir", dataDirectory.path] }
    /// `http://HOST:PORT` of the running daemon (a restart may change the port).
    var baseURL: URL { running.withLock { $0.baseURL } }
    let extraArguments: [String]
    /// The readiness line as printed by the last start.
    var readinessLine: String { running.withLock { $0.readinessLine } }
    /// The daemon's process id (for /proc readings).
    var pid: Int32 { process.processIdentifier }
    /// The running process and what it printed; a restart replaces them.
    private struct Running {
        var process: Process
        var stdout: PipeCollector
        var stderr: PipeCollector
        var baseURL: URL
        var readinessLine: String
    }

    private let running: Mutex<Running>
    private var process: Process { running.withLock { $0.process } }
    private var stdout: PipeCollector { running.withLock { $0.stdout } }
    private var stderr: PipeCollector { running.withLock { $0.stderr } }
    private let ownsDataDirectory: Bool

    private init(dataDirectory: URL, ownsDataDirectory: Bool, postgresURL: String? = nil, extraArguments: [String]) throws {
        self.dataDirectory = dataDirectory
        self.ownsDataDirectory = ownsDataDirectory
        self.postgresURL = postgresURL
        self.extraArguments = extraArguments
        let store = postgresURL.map { ["--database", $0] } ?? ["--data-dir", dataDirectory.path]
        let launched = try DaemonProcess.launch(storeArguments: store, extraArguments: extraArguments)
        running = Mutex(Running(process: launched.0, stdout: launched.1, stderr: launched.2, baseURL: launched.3, readinessLine: launched.4))
    }

    deinit {
        if process.isRunning {
            sendSignal(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        if ownsDataDirectory { try? FileManager.default.removeItem(at: dataDirectory) }
    }

    /// Starts a daemon on `dataDirectory` (a fresh temporary directory if nil) and waits until it
    /// prints its readiness line.
    static func start(dataDirectory: URL? = nil, extraArguments: [String] = []) throws -> DaemonProcess {
        let directory = dataDirectory ?? makeTemporaryDirectory(prefix: "scorebookd")
        do {
            return try DaemonProcess(dataDirectory: directory, ownsDataDirectory: dataDirectory == nil, extraArguments: extraArguments)
        } catch {
            if dataDirectory == nil { try? FileManager.default.removeItem(at: directory) }
            throw error
        }
    }

    /// Starts a daemon serving the PostgreSQL database at `postgresURL` (`serve --database URL`).
    static func start(postgresURL: String, extraArguments: [String] = []) throws -> DaemonProcess {
        let directory = makeTemporaryDirectory(prefix: "scorebookd-pg")
        do {
            return try DaemonProcess(dataDirectory: directory, ownsDataDirectory: true, postgresURL: postgresURL, extraArguments: extraArguments)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    private static func launch(storeArguments: [String], extraArguments: [String]) throws
        -> (Process, PipeCollector, PipeCollector, URL, String)
    {
        let (process, stdout, stderr) = try spawn("scorebookd", ["serve"] + storeArguments + ["--port", "0"] + extraArguments)
        guard let line = stdout.waitForFirstLine(timeout: readinessTimeout) else {
            if process.isRunning { sendSignal(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            _ = stderr.waitForEOF(timeout: 2)
            throw DaemonError("scorebookd printed no readiness line within \(Int(readinessTimeout)) s (exit \(process.terminationStatus)); stderr:\n\(stderr.text)")
        }
        guard let port = parseReadinessLine(line), let url = URL(string: "http://127.0.0.1:\(port)") else {
            sendSignal(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw DaemonError("unexpected readiness line \(line.debugDescription); stderr:\n\(stderr.text)")
        }
        return (process, stdout, stderr, url, line)
    }

    /// The port of an exact readiness line, or nil if the line has any other form.
    static func parseReadinessLine(_ line: String) -> Int? {
        guard let regex = try? NSRegularExpression(pattern: readinessPattern),
            let match = regex.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)),
            let range = Range(match.range(at: 2), in: line), let port = Int(line[range]), (1...65535).contains(port)
        else { return nil }
        return port
    }

    var port: Int { baseURL.port ?? 0 }
    var isRunning: Bool { process.isRunning }
    var processIdentifier: Int32 { process.processIdentifier }
    /// Everything the daemon wrote to standard error so far.
    var standardErrorText: String { stderr.text }
    /// Everything the daemon wrote to standard output so far.
    var standardOutputText: String { stdout.text }

    /// Sends SIGTERM (or `signal`), waits for the exit, and throws unless the daemon exited with status 0.
    func stop(signal: Int32 = SIGTERM) throws {
        guard process.isRunning else {
            try checkCleanExit()
            return
        }
        sendSignal(process.processIdentifier, signal)
        guard DaemonProcess.waitForExit(process, timeout: DaemonProcess.shutdownTimeout) else {
            sendSignal(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw DaemonError("scorebookd did not exit within \(Int(DaemonProcess.shutdownTimeout)) s of signal \(signal); stderr:\n\(stderr.text)")
        }
        try checkCleanExit()
    }

    private func checkCleanExit() throws {
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw DaemonError("scorebookd exited with \(process.terminationReason == .exit ? "status" : "signal") \(process.terminationStatus); stderr:\n\(stderr.text)")
        }
    }

    /// Sends SIGKILL and waits for the process to go.
    func kill() {
        guard process.isRunning else { return }
        sendSignal(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Stops the daemon (unless already killed) and starts it again on the same data directory.
    func restart() throws {
        if process.isRunning { try stop() }
        let launched = try DaemonProcess.launch(storeArguments: storeArguments, extraArguments: extraArguments)
        running.withLock {
            $0 = Running(process: launched.0, stdout: launched.1, stderr: launched.2, baseURL: launched.3, readinessLine: launched.4)
        }
    }

    // MARK: Administration subprocesses

    /// Creates a user with `scorebookd user create` and returns its token.
    func createUser(_ name: String) throws -> String {
        try createUserInfo(name).token
    }

    /// Creates a user and returns its record name and token.
    func createUserInfo(_ name: String, email: String? = nil) throws -> (userRecordName: String, token: String) {
        let json = try runAdminJSON(["user", "create", name] + (email.map { ["--email", $0] } ?? []) + storeArguments)
        guard let token = json["token"]?.stringValue, let recordName = json["userRecordName"]?.stringValue else {
            throw DaemonError("user create printed \(json.serializedString())")
        }
        return (recordName, token)
    }

    /// A new ckAPIToken from `scorebookd apitoken create`.
    func createAPIToken() throws -> String {
        let json = try runAdminJSON(["apitoken", "create"] + storeArguments)
        guard let token = json["apiToken"]?.stringValue else { throw DaemonError("apitoken create printed \(json.serializedString())") }
        return token
    }

    private func runAdminJSON(_ arguments: [String]) throws -> JSONValue {
        let result = try DaemonProcess.run("scorebookd", arguments)
        guard result.status == 0 else {
            throw DaemonError("scorebookd \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)")
        }
        return try JSONValue.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Starts a built executable with its output collected, and standard input empty or `input`.
    static func spawn(_ executable: String, _ arguments: [String], environment: [String: String] = [:], input: String? = nil) throws
        -> (Process, stdout: PipeCollector, stderr: PipeCollector)
    {
        let process = Process()
        process.executableURL = binaryURL(executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let outPipe = Pipe(), errPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        let inPipe = input.map { _ in Pipe() }
        process.standardInput = inPipe ?? FileHandle.nullDevice
        try process.run()
        if let inPipe, let input {
            inPipe.fileHandleForWriting.write(Data(input.utf8))
            try inPipe.fileHandleForWriting.close()
        }
        return (process, PipeCollector(outPipe.fileHandleForReading), PipeCollector(errPipe.fileHandleForReading))
    }

    /// Runs a built executable to completion (bounded by `timeout`, then killed).
    static func run(_ executable: String, _ arguments: [String], timeout: TimeInterval = 30) throws
        -> (status: Int32, stdout: String, stderr: String)
    {
        try runWithEnvironment(executable, arguments, environment: [:], timeout: timeout)
    }

    /// `run` with variables added to the test's environment.
    static func runWithEnvironment(_ executable: String, _ arguments: [String], environment: [String: String], input: String? = nil,
                                   timeout: TimeInterval = 30) throws -> (status: Int32, stdout: String, stderr: String)
    {
        let (process, out, err) = try spawn(executable, arguments, environment: environment, input: input)
        if !waitForExit(process, timeout: timeout) {
            sendSignal(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw DaemonError("\(executable) \(arguments.joined(separator: " ")) did not finish within \(Int(timeout)) s")
        }
        _ = out.waitForEOF(timeout: 5)
        _ = err.waitForEOF(timeout: 5)
        return (process.terminationStatus, out.text, err.text)
    }

    static func waitForExit(_ process: Process, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline { return false }
            usleep(10_000)
        }
        process.waitUntilExit()
        return true
    }

    // MARK: Locating binaries

    /// A built executable of this package. The xctest runner lives in the build products directory
    /// (`.build/debug`), which `Bundle.main` names on Linux; `SCOREBOOK_BUILD_DIR` overrides it, and
    /// as a last resort the directories are searched upwards from this file for `.build/debug`.
    static func binaryURL(_ name: String) -> URL {
        var candidates: [URL] = []
        if let override = ProcessInfo.processInfo.environment["SCOREBOOK_BUILD_DIR"] {
            candidates.append(URL(fileURLWithPath: override))
        }
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        for _ in 0..<6 {
            candidates.append(directory.appendingPathComponent(".build/debug"))
            directory = directory.deletingLastPathComponent()
        }
        for candidate in candidates {
            let url = candidate.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return Bundle.main.bundleURL.appendingPathComponent(name)
    }

    static func makeTemporaryDirectory(prefix: String) -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    // MARK: HTTP

    /// POSTs `json` (sent byte for byte) and parses the answer as JSON.
    func post(_ path: String, token: String?, json: String) throws -> (status: Int, body: JSONValue) {
        try request("POST", path, token: token, body: Array(json.utf8)).parsed()
    }

    /// GETs `path` and parses the answer as JSON.
    func get(_ path: String, token: String?) throws -> (status: Int, body: JSONValue) {
        try request("GET", path, token: token).parsed()
    }

    /// Sends one request exactly as given (method, path with query, headers, body bytes) over a
    /// fresh loopback connection. No normalisation of the path, so `..` reaches the daemon as sent.
    func request(_ method: String, _ path: String, token: String? = nil, headers: [(String, String)] = [],
                 body: [UInt8] = [], timeout: TimeInterval = 20) throws -> HTTPAnswer
    {
        var allHeaders = headers
        if let token { allHeaders.append(("Authorization", "Bearer \(token)")) }
        return try RawHTTP.send(port: port, method: method, path: path, headers: allHeaders, body: body, timeout: timeout)
    }
}

/// A failure of the harness itself, with what the daemon said.
struct DaemonError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// An HTTP answer: status, headers (lower-cased names) and body bytes.
struct HTTPAnswer {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as JSON; a body that is not JSON fails the test with what it was.
    func parsed() throws -> (status: Int, body: JSONValue) {
        do {
            return (status, try JSONValue.parse(body))
        } catch {
            throw DaemonError("HTTP \(status) answer is not JSON (\(error)): \(text.prefix(300))")
        }
    }
}

/// A minimal HTTP/1.1 client over a loopback socket: one request per connection, every read and
/// write bounded by a timeout. Used instead of URLSession so tests can send what a browser or curl
/// would refuse to (non-UTF-8 bodies, `..` in paths, odd methods) and see the exact bytes back.
enum RawHTTP {
    static func send(port: Int, method: String, path: String, headers: [(String, String)], body: [UInt8],
                     timeout: TimeInterval) throws -> HTTPAnswer
    {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if method != "GET" || !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return try parse(try sendBytes(port: port, Array(head.utf8) + body, timeout: timeout))
    }

    /// A blocking TCP socket connected to 127.0.0.1:`port`, with optional send and receive
    /// timeouts; the caller closes it.
    static func connectLoopback(port: Int, sendTimeout: TimeInterval? = nil, receiveTimeout: TimeInterval? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw DaemonError("socket() failed: errno \(errno)") }
        for (option, timeout) in [(SO_SNDTIMEO, sendTimeout), (SO_RCVTIMEO, receiveTimeout)] {
            guard let timeout else { continue }
            var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, option, &tv, socklen_t(MemoryLayout<timeval>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw DaemonError("cannot connect to 127.0.0.1:\(port): errno \(code)")
        }
        return fd
    }

    /// Sends `request` byte for byte and returns every byte of the answer (until the server closes).
    static func sendBytes(port: Int, _ request: [UInt8], timeout: TimeInterval) throws -> [UInt8] {
        let fd = try connectLoopback(port: port, sendTimeout: timeout, receiveTimeout: timeout)
        defer { close(fd) }

        // A server may answer (say, 413) and stop reading before the whole body is sent: writing
        // stops as soon as the answer is readable (or a write fails), then the answer is read.
        var offset = 0
        var answered = false
        let writeDeadline = Date().addingTimeInterval(timeout)
        while offset < request.count, Date() < writeDeadline {
            var pollFD = pollfd(fd: fd, events: Int16(POLLIN | POLLOUT), revents: 0)
            guard poll(&pollFD, 1, 1000) >= 0 || errno == EINTR else { break }
            if pollFD.revents & Int16(POLLIN) != 0 { answered = true; break }
            if pollFD.revents & Int16(POLLERR | POLLHUP) != 0 { break }
            guard pollFD.revents & Int16(POLLOUT) != 0 else { continue }
            let written = request[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, min($0.count, 1 << 20), Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if written < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            if written <= 0 { break }
            offset += written
        }
        let writeFailed = offset < request.count && !answered
        shutdown(fd, Int32(SHUT_WR))

        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { received.append(contentsOf: buffer[0..<count]); continue }
            if count == 0 { break }
            if errno == EINTR { continue }
            if received.isEmpty { throw DaemonError("no answer from 127.0.0.1:\(port) (errno \(errno)\(writeFailed ? ", write failed" : ""))") }
            break  // ECONNRESET after a complete answer
        }
        return received
    }

    static func parse(_ bytes: [UInt8]) throws -> HTTPAnswer {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headEnd = (0..<max(0, bytes.count - 3)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else {
            throw DaemonError("incomplete HTTP answer: \(String(decoding: bytes.prefix(200), as: UTF8.self).debugDescription)")
        }
        let headLines = String(decoding: bytes[0..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = headLines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw DaemonError("bad status line \(headLines[0])") }
        var headers: [String: String] = [:]
        for line in headLines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(bytes[(headEnd + 4)...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = try dechunk(body) }
        else if let length = headers["content-length"].flatMap(Int.init), length <= body.count { body = Array(body[0..<length]) }
        return HTTPAnswer(status: status, headers: headers, body: body)
    }

    static func dechunk(_ bytes: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard let lineEnd = (index..<max(index, bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }) else { break }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { throw DaemonError("bad chunk size") }
            if size == 0 { break }
            let start = lineEnd + 2
            guard start + size <= bytes.count else { throw DaemonError("truncated chunk") }
            out.append(contentsOf: bytes[start..<start + size])
            index = start + size + 2
        }
        return out
    }
}

/// Drains a pipe on a background thread (so the child never blocks on a full pipe) and lets the
/// test wait, with a deadline, for the first line or for EOF.
final class PipeCollector: Sendable {
    private struct Collected {
        var data: [UInt8] = []
        var finished = false
    }

    private let collected = WaitableBox(Collected())

    init(_ handle: FileHandle) {
        let thread = Thread { [collected] in
            while true {
                let chunk = handle.availableData
                collected.update { if chunk.isEmpty { $0.finished = true } else { $0.data.append(contentsOf: chunk) } }
                if chunk.isEmpty { return }
            }
        }
        thread.start()
    }

    var text: String { String(decoding: collected.value.data, as: UTF8.self) }

    /// The first complete line (without its newline), or nil if none arrives in time.
    func waitForFirstLine(timeout: TimeInterval) -> String? {
        let seen = collected.wait(until: Date().addingTimeInterval(timeout)) { $0.finished || $0.data.contains(0x0A) }
        guard let newline = seen.data.firstIndex(of: 0x0A) else { return nil }
        return String(decoding: seen.data[..<newline], as: UTF8.self)
    }

    /// Waits until the writer closes the pipe; false on timeout.
    func waitForEOF(timeout: TimeInterval) -> Bool {
        collected.wait(until: Date().addingTimeInterval(timeout)) { $0.finished }.finished
    }
}
