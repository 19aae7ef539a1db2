import Foundation
import RecordModel
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn` and reaped with `wait4`: cheaper per start than
/// Foundation's `Process`, which matters when the start is what is being measured.
final class Subprocess {
    let pid: pid_t
    /// The read end of the child's standard output, when it was captured.
    let output: Int32?
    /// The write end of the child's standard input, when the bench feeds it.
    private(set) var input: Int32?
    private var pending: [UInt8] = []

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// How a child ended.
    struct Exit {
        var status: Int32
        var seconds: Double
    }

    private let started: Double

    /// Starts `path` with `arguments`. Standard error goes to /dev/null unless `keepStandardError`;
    /// standard output is captured (`output`) or discarded; standard input is a pipe the bench
    /// writes (`writeLine`) with `captureInput`, else empty.
    init(_ path: String, _ arguments: [String], captureOutput: Bool = false, captureInput: Bool = false, keepStandardError: Bool = false) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        /// A pipe whose end `childEnd` (0 read, 1 write) becomes the child's descriptor `standard`.
        func pipe(becoming standard: Int32, childEnd: Int) throws -> [Int32] {
            var ends: [Int32] = [-1, -1]
            guard Glibc.pipe(&ends) == 0 else { throw Failure(description: "pipe() failed: \(errno)") }
            posix_spawn_file_actions_adddup2(&actions, ends[childEnd], standard)
            posix_spawn_file_actions_addclose(&actions, ends[0])
            posix_spawn_file_actions_addclose(&actions, ends[1])
            return ends
        }
        let pipeEnds = captureOutput ? try pipe(becoming: 1, childEnd: 1) : [-1, -1]
        if !captureOutput { posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0) }
        if !keepStandardError { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }
        let inputEnds = captureInput ? try pipe(becoming: 0, childEnd: 0) : [-1, -1]
        if !captureInput { posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        started = now()
        let rc = posix_spawn(&child, path, &actions, nil, argv, environ)
        if captureOutput { close(pipeEnds[1]) }
        if captureInput { close(inputEnds[0]) }
        guard rc == 0 else {
            if captureOutput { close(pipeEnds[0]) }
            if captureInput { close(inputEnds[1]) }
            throw Failure(description: "cannot start \(path): \(String(cString: strerror(rc)))")
        }
        pid = child
        output = captureOutput ? pipeEnds[0] : nil
        input = captureInput ? inputEnds[1] : nil
    }

    deinit {
        if let output { close(output) }
        closeInput()
    }

    /// Writes `line` and a newline to the child's standard input.
    func writeLine(_ line: String) throws {
        guard let input else { throw Failure(description: "the child's input is not a pipe") }
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
            guard count > 0 else { throw Failure(description: "cannot write to the child: errno \(errno)") }
            sent += count
        }
    }

    /// Ends the child's standard input (it reads end of file).
    func closeInput() {
        if let input { close(input) }
        input = nil
    }

    /// Waits for the child to end.
    func wait() throws -> Exit {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw Failure(description: "wait4 failed: \(errno)") }
        }
        let seconds = now() - started
        // WIFEXITED / WEXITSTATUS, which Swift does not import.
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Exit(status: code, seconds: seconds)
    }

    /// The next line of standard output, or nil at its end or after `timeout` seconds.
    func readLine(timeout: Double = 30) -> String? {
        guard let output else { return nil }
        let deadline = now() + timeout
        while true {
            if let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeFirst(newline + 1)
                return line
            }
            let left = Int32(max(0, (deadline - now()) * 1000))
            var descriptor = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&descriptor, 1, left) > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            guard count > 0 else { return nil }
            pending += chunk[0..<count]
        }
    }

    /// Everything left on standard output, until the child closes it.
    func readToEnd() -> String {
        var text = ""
        while let line = readLine(timeout: 3600) { text += line + "\n" }
        text += String(decoding: pending, as: UTF8.self)
        pending = []
        return text
    }

    func signal(_ number: Int32) { kill(pid, number) }

    /// `VmRSS` and `VmHWM` (peak) of a running process, in bytes, from /proc/PID/status.
    static func memory(of pid: pid_t) -> (resident: Int, peak: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func kilobytes(_ key: String) -> Int? {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return nil }
            return Int(line.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        guard let resident = kilobytes("VmRSS"), let peak = kilobytes("VmHWM") else { return nil }
        return (resident * 1024, peak * 1024)
    }

    /// Runs a command to its end and returns its standard output; throws on a non-zero exit.
    static func run(_ path: String, _ arguments: [String]) throws -> String {
        let child = try Subprocess(path, arguments, captureOutput: true, keepStandardError: true)
        let text = child.readToEnd()
        let exit = try child.wait()
        guard exit.status == 0 else {
            throw Failure(description: "\((path as NSString).lastPathComponent) \(arguments.joined(separator: " ")) exited \(exit.status)")
        }
        return text
    }
}

/// Runs a command under GNU time and returns its peak RSS in bytes and its standard output.
/// `ru_maxrss` of our own child is useless here: Linux carries the parent's resident set over
/// a (v)fork and exec, so every child would "peak" at least at the bench's size. GNU time forks
/// the command from its own tiny process.
func peakResidentSize(_ path: String, _ arguments: [String]) throws -> (bytes: Int, output: String, seconds: Double) {
    let report = NSTemporaryDirectory() + "scorebook-bench-time-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: report) }
    let child = try Subprocess("/usr/bin/time", ["-f", "%M", "-o", report, path] + arguments, captureOutput: true,
                               keepStandardError: true)
    let output = child.readToEnd()
    let exit = try child.wait()
    guard exit.status == 0 else {
        throw Subprocess.Failure(description: "\((path as NSString).lastPathComponent) \(arguments.joined(separator: " ")) exited \(exit.status)")
    }
    let text = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
    guard let kilobytes = text.split(separator: "\n").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) else {
        throw Subprocess.Failure(description: "/usr/bin/time reported '\(text)' (apt-get install time)")
    }
    return (kilobytes * 1024, output, exit.seconds)
}

/// Where the release binaries are: `SCOREBOOK_BIN_DIR`, else the directory of this executable
/// (SwiftPM puts every product of a build side by side).
func siblingBinary(_ name: String) throws -> String {
    var directories: [String] = []
    if let fromEnvironment = ProcessInfo.processInfo.environment["SCOREBOOK_BIN_DIR"], !fromEnvironment.isEmpty {
        directories.append(fromEnvironment)
    }
    if let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        directories.append((own as NSString).deletingLastPathComponent)
    }
    directories.append((CommandLine.arguments[0] as NSString).deletingLastPathComponent)
    for directory in directories {
        let path = directory + "/" + name
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    throw Subprocess.Failure(description: "no \(name) binary next to scorebook-bench (build it: swift build -c release --product \(name)); looked in \(directories)")
}

/// A real release `scorebookd serve` on a free loopback port, with one user: on the SQLite store
/// of `directory`, or on the PostgreSQL `database` (several daemons may serve one; pass the first
/// one's `token` to share its user).
final class DaemonUnderTest: BenchTarget {
    let process: Subprocess
    let directory: String
    let port: Int
    let token: String
    let container: String
    let environment: String
    /// `--data-dir DIR` or `--database URL`.
    let storeArguments: [String]

    init(directory: String, database: String? = nil, token: String? = nil, container: String = "iCloud.bench",
         environment: String = "development", extraArguments: [String] = []) throws
    {
        let binary = try siblingBinary("scorebookd")
        self.directory = directory
        self.container = container
        self.environment = environment
        storeArguments = database.map { ["--database", $0] } ?? ["--data-dir", directory]
        process = try Subprocess(binary, ["serve"] + storeArguments + ["--port", "0", "--log-level", "error"] + extraArguments,
                                 captureOutput: true, keepStandardError: true)
        guard let line = process.readLine(timeout: 60), let range = line.range(of: "http://127.0.0.1:"),
              let port = Int(line[range.upperBound...])
        else {
            process.signal(SIGKILL)
            _ = try? process.wait()
            throw Subprocess.Failure(description: "scorebookd did not announce its port")
        }
        self.port = port
        if let token {
            self.token = token
            return
        }
        // After `serve` made the store: `user create` refuses a store that does not exist.
        do {
            self.token = try DaemonUnderTest.createUser("bench", storeArguments: storeArguments)
        } catch {
            process.signal(SIGKILL)
            _ = try? process.wait()
            throw error
        }
    }

    /// `scorebookd user create NAME` on the store; the new user's token.
    static func createUser(_ name: String, storeArguments: [String]) throws -> String {
        let created = try Subprocess.run(try siblingBinary("scorebookd"), ["user", "create", name] + storeArguments)
        guard let token = try JSONValue.parse(Array(created.utf8))["token"]?.stringValue else {
            throw Subprocess.Failure(description: "scorebookd user create printed \(created)")
        }
        return token
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }
    var databasePath: String { "/database/1/\(container)/\(environment)/private" }
    var environmentPath: String { "/database/1/\(container)/\(environment)" }

    private var stopped = false

    /// SIGTERM, then the exit.
    func stop() throws -> Subprocess.Exit {
        stopped = true
        process.signal(SIGTERM)
        return try process.wait()
    }

    /// A scenario that failed half-way leaves no daemon behind (the bench exits without unwinding
    /// further, and the daemon would serve on, holding its connections' memory).
    deinit {
        guard !stopped else { return }
        process.signal(SIGKILL)
        _ = try? process.wait()
    }
}
