import CNIOLinux
import Foundation
import RecordClient
#if canImport(Glibc)
import Glibc
#endif

/// A minimal blocking HTTP/1.1 client over one keep-alive socket. Benchmarks use it instead of
/// URLSession so the client's own overhead stays small next to the server's.
final class RawHTTPConnection {
    let fd: Int32
    private var buffer: [UInt8] = []

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// `source` binds the client end to that local address first: one source address has at
    /// most ~64,000 ports towards one server port, so 100,000 streams need several (any
    /// 127.x.y.z is loopback on Linux).
    init(host: String = "127.0.0.1", port: Int, source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed: \(errno)") }
        if let source, RawHTTPConnection.withAddress(source, port: 0, { bind(fd, $0, $1) }) != 0 {
            close(fd)
            throw Failure(description: "bind(\(source)) failed: \(errno)")
        }
        guard RawHTTPConnection.withAddress(host, port: port, { connect(fd, $0, $1) }) == 0 else {
            close(fd)
            throw Failure(description: "connect() failed: \(errno)")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    /// Calls `body` (bind or connect) with the IPv4 socket address of `host`:`port`.
    private static func withAddress(_ host: String, port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// The client address for the `index`th of many connections: 127.0.0.1 for the first
    /// 50,000, then 127.0.0.2, 127.0.0.3, … (see `init(host:port:source:)`).
    static func loopbackSource(forConnection index: Int) -> String? {
        index < 50_000 ? nil : "127.0.0.\(1 + index / 50_000)"
    }

    /// One 64 KiB read buffer per thread, for every connection that thread reads: a fresh array
    /// per read cost the fan-out client ~60 MB of zeroing per round at 1,000 streams, and one
    /// buffer for the whole process was raced by the writer lanes' threads (`runWriters`), which
    /// corrupted answers now and then ("connection closed").
    private static let scratchSize = 65_536
    private static let scratchKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { free($0) }
        return key
    }()

    private static var threadScratch: UnsafeMutableRawPointer {
        if let scratch = pthread_getspecific(scratchKey) { return scratch }
        let scratch = malloc(scratchSize)!
        pthread_setspecific(scratchKey, scratch)
        return scratch
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { throw Failure(description: "write failed: \(errno)") }
            offset += written
        }
    }

    /// Reads more bytes into the buffer; false at end of stream.
    func fill(timeoutMilliseconds: Int32 = 30_000) throws -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, timeoutMilliseconds) > 0 else { throw Failure(description: "read timed out") }
        let scratch = Self.threadScratch
        let count = read(fd, scratch, Self.scratchSize)
        guard count > 0 else { return false }
        buffer.append(contentsOf: UnsafeRawBufferPointer(start: scratch, count: count))
        return true
    }

    /// Reads what has arrived without waiting (for a socket epoll reported readable): no `poll`
    /// first, which at 10,000 streams was a system call per delivery in the measured round.
    /// False at end of stream or when nothing was there.
    func fillAvailable() -> Bool {
        let scratch = Self.threadScratch
        let count = recv(fd, scratch, Self.scratchSize, Int32(MSG_DONTWAIT))
        guard count > 0 else { return false }
        buffer.append(contentsOf: UnsafeRawBufferPointer(start: scratch, count: count))
        return true
    }

    /// What has arrived and not been taken, without copying it out.
    func withBuffered<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        buffer.withUnsafeBufferPointer(body)
    }

    /// Drops what has arrived (keeping the buffer's storage for the next reads).
    func discardBuffered() { buffer.removeAll(keepingCapacity: true) }

    /// `acceptEncoding`: a gzip answer is inflated before it is returned; `wire` counts the body as it came.
    func request(_ method: String, _ path: String, token: String?, body: [UInt8] = [], accept: String? = nil, acceptEncoding: String? = nil,
                 wire: WireBytes? = nil) throws -> (status: Int, body: [UInt8])
    {
        try sendRequest(method, path, token: token, body: body, accept: accept, acceptEncoding: acceptEncoding)
        let (status, headers, answer) = try readResponseAndHead()
        wire?.bytes += answer.count
        guard headers.contains("content-encoding: gzip") else { return (status, answer) }
        return (status, try Gzip.decompress(answer, limit: 1 << 30))
    }

    func sendRequest(_ method: String, _ path: String, token: String?, body: [UInt8] = [], accept: String? = nil,
                     acceptEncoding: String? = nil) throws
    {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if let accept { head += "Accept: \(accept)\r\n" }
        if let acceptEncoding { head += "Accept-Encoding: \(acceptEncoding)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8) + body)
    }

    /// Reads the status line and headers; returns the status and the header block.
    func readHead() throws -> (status: Int, headers: String) {
        while true {
            if let end = findHeaderEnd() {
                let head = String(decoding: buffer[0..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
                return (status, head.lowercased())
            }
            guard try fill() else { throw Failure(description: "connection closed") }
        }
    }

    func readResponse() throws -> (status: Int, body: [UInt8]) {
        let (status, _, body) = try readResponseAndHead()
        return (status, body)
    }

    /// The status, the header block (lower-cased) and the body as it came (dechunked).
    func readResponseAndHead() throws -> (status: Int, headers: String, body: [UInt8]) {
        let (status, headers) = try readHead()
        if let range = headers.range(of: "content-length: ") {
            let length = Int(headers[range.upperBound...].prefix { $0.isNumber }) ?? 0
            while buffer.count < length { guard try fill() else { throw Failure(description: "connection closed") } }
            let body = Array(buffer[0..<length])
            buffer.removeFirst(length)
            return (status, headers, body)
        }
        // Chunked.
        var body: [UInt8] = []
        while true {
            let line = try readLine()
            let size = Int(line.split(separator: ";").first ?? "", radix: 16) ?? 0
            if size == 0 {
                _ = try readLine()
                return (status, headers, body)
            }
            while buffer.count < size + 2 { guard try fill() else { throw Failure(description: "connection closed") } }
            body.append(contentsOf: buffer[0..<size])
            buffer.removeFirst(size + 2)
        }
    }

    func readLine() throws -> String {
        while true {
            if let index = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[0..<index], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                buffer.removeFirst(index + 1)
                return line
            }
            guard try fill() else { throw Failure(description: "connection closed") }
        }
    }

    /// For event streams: takes whatever bytes are buffered.
    func drain() -> [UInt8] {
        defer { buffer.removeAll(keepingCapacity: true) }
        return buffer
    }

    private func findHeaderEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4) where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }
}

/// Bytes of answer bodies as they came over the wire (compressed or not).
final class WireBytes {
    var bytes = 0
}
