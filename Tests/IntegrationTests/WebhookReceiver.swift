import Foundation
import RecordModel
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A webhook receiver on loopback, as a customer would run one: plain sockets, one thread per
/// connection, keep-alive, and its own Standard Webhooks verification (HMAC-SHA256 written here
/// over RecordModel's SHA-256, not the daemon's code). It can answer 500, answer too late, or be
/// down (its port closed), and it records every request it got.
final class WebhookReceiver: Sendable {
    enum Mode: Sendable, Equatable {
        case accept
        case fail(Int)
        /// Answer 200, but only after this many seconds: longer than the daemon's timeout.
        case slow(Double)
        /// Answer 200 after this many seconds, within the daemon's timeout.
        case delay(Double)
    }

    /// One request as received.
    struct Delivery: Sendable {
        var id: String
        var body: JSONValue
        var verified: Bool
        /// Whether it was answered 2xx in time (a `slow` answer counts as a failure).
        var acknowledged: Bool
        var receivedAt: Date
    }

    private struct State {
        var mode: Mode = .accept
        var deliveries: [Delivery] = []
        var listener: Int32 = -1
        var connections: Set<Int32> = []
        /// Ids being answered now: the same id twice at once is a violation.
        var inFlight: Set<String> = []
        var concurrentDuplicates: [String] = []
    }

    private let state = Mutex(State())
    let key: [UInt8]
    private(set) nonisolated(unsafe) var port: Int = 0

    /// The secret's key part, to check that no log line carries it.
    let secretForLogCheck: String

    init(secret: String) throws {
        secretForLogCheck = String(secret.dropFirst(6))
        let encoded = secret.hasPrefix("whsec_") ? String(secret.dropFirst(6)) : secret
        guard let key = Data(base64Encoded: encoded) else { throw ReceiverError("secret is not base64") }
        self.key = Array(key)
        try start()
    }

    var url: String { "http://127.0.0.1:\(port)/hooks/scorebook?source=test" }

    func setMode(_ mode: Mode) { state.withLock { $0.mode = mode } }
    var deliveries: [Delivery] { state.withLock { $0.deliveries } }
    var concurrentDuplicates: [String] { state.withLock { $0.concurrentDuplicates } }

    /// Listens again, on the same port once it had one.
    func start() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ReceiverError("socket failed") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw ReceiverError("cannot listen on 127.0.0.1:\(port): errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        state.withLock { $0.listener = fd }
        Thread.detachNewThread { [self] in acceptLoop(fd) }
    }

    /// Closes the port and every open connection: the receiver is down.
    func stop() {
        let (listener, connections) = state.withLock { state -> (Int32, Set<Int32>) in
            defer { state.listener = -1; state.connections = [] }
            return (state.listener, state.connections)
        }
        if listener >= 0 { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }
        for fd in connections { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    deinit { stop() }

    private func acceptLoop(_ listener: Int32) {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            state.withLock { _ = $0.connections.insert(fd) }
            Thread.detachNewThread { [self] in serve(fd) }
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            state.withLock { _ = $0.connections.remove(fd) }
            close(fd)
        }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            // Head, then a body of Content-Length bytes.
            var headEnd: Int?
            while headEnd == nil {
                if let range = Self.find([13, 10, 13, 10], in: buffer) { headEnd = range; break }
                let count = read(fd, &chunk, chunk.count)
                if count <= 0 { return }
                buffer += chunk[0..<count]
            }
            let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
            var headers: [String: String] = [:]
            for line in head.split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            let bodyStart = headEnd! + 4
            while buffer.count < bodyStart + length {
                let count = read(fd, &chunk, chunk.count)
                if count <= 0 { return }
                buffer += chunk[0..<count]
            }
            let body = Array(buffer[bodyStart..<(bodyStart + length)])
            buffer.removeFirst(bodyStart + length)
            let id = headers["webhook-id"] ?? ""
            let verified = verify(id: id, timestamp: headers["webhook-timestamp"] ?? "", signatures: headers["webhook-signature"] ?? "", body: body)
            let mode = state.withLock { state -> Mode in
                if !state.inFlight.insert(id).inserted { state.concurrentDuplicates.append(id) }
                return state.mode
            }
            var status = 200
            switch mode {
            case .accept: break
            case .fail(let code): status = code
            case .slow(let seconds), .delay(let seconds): Thread.sleep(forTimeInterval: seconds)
            }
            let parsed = (try? JSONValue.parse(body)) ?? .null
            state.withLock { state in
                state.inFlight.remove(id)
                let acknowledged = status == 200 && {
                    if case .slow = mode { return false } else { return true }
                }()
                state.deliveries.append(Delivery(id: id, body: parsed, verified: verified, acknowledged: acknowledged, receivedAt: Date()))
            }
            let answer = "HTTP/1.1 \(status) \(status == 200 ? "OK" : "Error")\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
            let bytes = Array(answer.utf8)
            guard send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { return }
        }
    }

    /// Standard Webhooks: `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>` among the
    /// space-separated signatures, and a timestamp within five minutes.
    func verify(id: String, timestamp: String, signatures: String, body: [UInt8]) -> Bool {
        guard let seconds = Double(timestamp), abs(Date().timeIntervalSince1970 - seconds) < 300 else { return false }
        let expected = "v1," + Data(Self.hmacSHA256(key: key, message: Array("\(id).\(timestamp).".utf8) + body)).base64EncodedString()
        return signatures.split(separator: " ").contains { $0 == expected }
    }

    /// RFC 2104 over SHA-256 (64-byte blocks).
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? SHA256Hasher.digest(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = SHA256Hasher.digest(block.map { $0 ^ 0x36 } + message)
        return SHA256Hasher.digest(block.map { $0 ^ 0x5C } + inner)
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) { return start }
        return nil
    }

    struct ReceiverError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
