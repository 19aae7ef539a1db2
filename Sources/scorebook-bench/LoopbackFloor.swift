import Foundation
import RecordServer
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The floor under a fan-out round, measured in the same run: the same number of writes of the
/// same size as the daemon's round, from two threads (the daemon's two event loops), to loopback
/// TCP sockets drained by the bench client's own reading (`awaitOnAll`: one epoll set, one read
/// per ready socket, looking every 250 µs, at the client's nice value), with no server at all.
/// What a round of the daemon takes above this is the daemon's; what this takes is the machine's.
///
/// It runs in a child process (`scorebook-bench --loopback-floor PAIRS NICE`) because the bench
/// already holds its connections to the daemon; and because one process may hold only 20,000
/// descriptors here and holds both ends of each pair, 10,000 subscribers get 9,990 pairs.
final class LoopbackFloor {
    private let child: Subprocess
    let pairs: Int

    init(pairs wanted: Int, clientNice: Int32) throws {
        let limit = Int(OpenFileLimit.raiseToMaximum())
        pairs = min(wanted, max(1, (limit - 20) / 2))
        child = try Subprocess(try siblingBinary("scorebook-bench"), ["--loopback-floor", String(pairs), String(clientNice)],
                               captureOutput: true, captureInput: true, keepStandardError: true)
        guard child.readLine(timeout: 60) == "ready" else {
            throw Subprocess.Failure(description: "the loopback floor did not start")
        }
    }

    /// One round: every socket is written `bytes` bytes. Milliseconds until the last write
    /// returned and until the reader had every byte.
    func round(bytes: Int) throws -> (writers: Double, all: Double) {
        try child.writeLine("round \(bytes)")
        guard let line = child.readLine(timeout: 30) else { throw Subprocess.Failure(description: "the loopback floor stopped answering") }
        let figures = line.split(separator: " ").compactMap { Double($0) }
        guard figures.count == 2 else { throw Subprocess.Failure(description: "the loopback floor failed: \(line)") }
        return (figures[0], figures[1])
    }

    func stop() {
        child.closeInput()
        _ = try? child.wait()
    }

    /// The child: builds the pairs, then answers `round BYTES` lines on standard input until it ends.
    static func runChild(pairs: Int, nice: Int32) -> Never {
        // The bench's own sockets (to the daemon) came along through the spawn: they would take
        // half of this process's descriptors.
        let limit = Int32(clamping: OpenFileLimit.raiseToMaximum())
        for descriptor in 3..<max(3, limit) { close(descriptor) }
        do {
            let sockets = try SocketPairs(count: pairs)
            let rounds = try FloorRounds(sockets, readerNice: nice)
            print("ready")
            fflush(nil)
            while let line = Swift.readLine() {
                let words = line.split(separator: " ")
                guard words.count == 2, words[0] == "round", let bytes = Int(words[1]), bytes > 0, bytes <= 65_536 else {
                    print("error: expected round BYTES, got \(line)")
                    fflush(nil)
                    continue
                }
                if let (writers, all) = rounds.run(bytes: bytes) {
                    print(String(format: "%.3f %.3f", writers, all))
                } else {
                    print("error: the reader did not get every byte in 10 s")
                }
                fflush(nil)
            }
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("scorebook-bench --loopback-floor: \(error)\n".utf8))
            exit(1)
        }
    }
}

/// `count` connected loopback TCP pairs: the accepted (server) ends, and the connecting ends as
/// the bench client's own connections.
struct SocketPairs {
    var servers: [Int32] = []
    var clients: [RawHTTPConnection] = []

    /// Closes the server ends (each client closes with its connection).
    func closeServers() { for server in servers { Glibc.close(server) } }

    init(count: Int) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        guard listener >= 0, bound, listen(listener, 4096) == 0 else { throw Subprocess.Failure(description: "cannot listen: errno \(errno)") }
        defer { close(listener) }
        let port = Int(UInt16(bigEndian: address.sin_port))
        for _ in 0..<count {
            let client = try RawHTTPConnection(port: port)
            let server = accept(listener, nil, nil)
            guard server >= 0 else { throw Subprocess.Failure(description: "cannot accept pair \(clients.count): errno \(errno)") }
            // As the daemon's connections are.
            var one: Int32 = 1
            setsockopt(server, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            servers.append(server)
            clients.append(client)
        }
    }
}

/// The two writer threads of the floor, parked between rounds, and its reader: the bench
/// client's own (`awaitOnAll`).
private final class FloorRounds {
    private let sockets: SocketPairs
    private let readiness: ReadinessSet
    private let readerNice: Int32
    private let writers: FloorWriters

    init(_ sockets: SocketPairs, readerNice: Int32) throws {
        self.sockets = sockets
        self.readerNice = readerNice
        readiness = try ReadinessSet(sockets.clients)
        writers = FloorWriters(servers: sockets.servers)
    }

    /// Nil when the reader did not get every byte in 10 s.
    func run(bytes: Int) -> (writers: Double, all: Double)? {
        let start = now()
        writers.startRound(bytes: bytes)
        let read = try? awaitOnAll(sockets.clients, readiness: readiness, start: start, what: "floor sockets",
                                   clientNice: readerNice) { $0.count >= bytes }
        let all = (now() - start) * 1000
        let writersEnded = writers.waitForRound()
        guard read != nil else { return nil }
        return ((writersEnded - start) * 1000, all)
    }
}

/// The floor's two writer threads: each writes its half of the server ends once a round.
private final class FloorWriters: Sendable {
    private let servers: [Int32]
    private let go = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
    private let written = DispatchSemaphore(value: 0)
    /// Set before the writers are let go (ordered by the semaphores).
    private let bytes = Atomic<Int>(0)
    /// When each writer finished its half: one slot each.
    private let writerEnds = Mutex<[Double]>([0, 0])

    init(servers: [Int32]) {
        self.servers = servers
        for half in 0..<2 {
            Thread { [self] in writeForever(half: half) }.start()
        }
    }

    func startRound(bytes: Int) {
        self.bytes.store(bytes, ordering: .relaxed)
        go.forEach { $0.signal() }
    }

    /// Waits for both halves; when the later one finished.
    func waitForRound() -> Double {
        written.wait()
        written.wait()
        return writerEnds.withLock { max($0[0], $0[1]) }
    }

    private func writeForever(half: Int) {
        let buffer = [UInt8](repeating: UInt8(ascii: "x"), count: 65_536)
        let count = servers.count
        while true {
            go[half].wait()
            let bytes = self.bytes.load(ordering: .relaxed)
            buffer.withUnsafeBytes { raw in
                for index in (count * half / 2)..<(count * (half + 1) / 2) {
                    _ = write(servers[index], raw.baseAddress, bytes)
                }
            }
            let ended = now()
            writerEnds.withLock { $0[half] = ended }
            written.signal()
        }
    }
}
