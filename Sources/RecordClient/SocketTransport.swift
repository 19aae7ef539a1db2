import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP transport: HTTP/1.1 over POSIX sockets with keep-alive connections, for `http://`
/// servers; `https://` goes through libcurl, loaded only when first needed (`CurlTransport`).
///
/// Why not URLSession: on Linux it is libcurl underneath, and linking FoundationNetworking
/// makes every `scorebook` command load libcurl and its ~30 libraries before `main` (a third of
/// a `--help`'s 25 ms went to the dynamic loader), and it adds about a millisecond to every
/// loopback request, which a sync hop pays three times.
public final class SocketTransport: HTTPTransport {
    /// Kept-alive sockets per server, as bare descriptors: a connection object is one caller's at a
    /// time, so only its descriptor is shared between requests.
    private let idleSockets = Mutex<[String: [Int32]]>([:])
    private static let maximumIdlePerServer = 4

    public init() {}

    deinit {
        idleSockets.withLock { for descriptor in $0.values.joined() { Glibc.close(descriptor) } }
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        // Blocking I/O with poll() deadlines, on a dispatch thread so no task executor blocks.
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try self.sendBlocking(request) })
            }
        }
    }

    func sendBlocking(_ request: HTTPRequest) throws -> HTTPResponse {
        let request = try Self.compressingLargeBatch(request)
        let scheme = request.url.scheme?.lowercased() ?? ""
        if scheme == "https" { return try CurlTransport.send(request) }
        guard scheme == "http", let host = request.url.host, !host.isEmpty else {
            throw RecordClientError.unreachable("cannot reach \(request.url.absoluteString): only http:// and https:// servers are supported")
        }
        let port = request.url.port ?? 80
        let server = HTTPServerAddress(host: host, port: port)
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(request.timeout, 0.001) * 1e9)
        let head = Self.requestHead(request, server: server)

        if let connection = takeIdleConnection(server) {
            // A kept-alive connection the server may have closed meanwhile (idle timeout): if it
            // fails before any byte of an answer, the server never handled the request, and a
            // fresh connection may resend it.
            do {
                return try exchange(on: connection, head: head, request: request, server: server, deadline: deadline)
            } catch HTTPConnection.Failure.closedBeforeAnswer {
                connection.close()
            } catch {
                connection.close()
                throw error
            }
        }
        let connection = try HTTPConnection.open(server, deadline: deadline)
        do {
            return try exchange(on: connection, head: head, request: request, server: server, deadline: deadline)
        } catch {
            connection.close()
            if case HTTPConnection.Failure.closedBeforeAnswer = error {
                throw RecordClientError.unreachable("the server at \(server) closed the connection without answering")
            }
            throw error
        }
    }

    private func exchange(on connection: HTTPConnection, head: [UInt8], request: HTTPRequest, server: HTTPServerAddress,
                          deadline: UInt64) throws -> HTTPResponse
    {
        if let file = request.bodyFile {
            // Streamed from disk piece by piece: an upload costs a piece of memory, not its size.
            try connection.write(head, deadline: deadline, server: server)
            try file.forEachPiece { try connection.write($0, deadline: deadline, server: server) }
        } else {
            try connection.write(head + (request.body ?? []), deadline: deadline, server: server)
        }
        let answer = try connection.readResponse(deadline: deadline, server: server)
        if answer.keepAlive {
            putIdleConnection(connection, server)
        } else {
            connection.close()
        }
        return HTTPResponse(status: answer.status, body: answer.body)
    }

    static func requestHead(_ request: HTTPRequest, server: HTTPServerAddress) -> [UInt8] {
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        var head = "\(request.method) \(target) HTTP/1.1\r\nHost: \(server.hostHeader)\r\n"
        var hasContentType = false
        if !request.headers.keys.contains(where: { $0.lowercased() == "accept-encoding" }) { head += "Accept-Encoding: gzip\r\n" }
        for (name, value) in request.headers {
            let lowered = name.lowercased()
            if lowered == "content-length" || lowered == "host" || lowered == "connection" { continue }
            if lowered == "content-type" { hasContentType = true }
            // Header injection is impossible through this API: no line breaks pass.
            let clean = value.filter { $0 != "\r" && $0 != "\n" }
            head += "\(name): \(clean)\r\n"
        }
        if let file = request.bodyFile {
            if !hasContentType { head += "Content-Type: application/octet-stream\r\n" }
            head += "Content-Length: \(file.size)\r\n"
        } else if let body = request.body {
            if !hasContentType { head += "Content-Type: application/json\r\n" }
            head += "Content-Length: \(body.count)\r\n"
        } else if request.method != "GET" {
            head += "Content-Length: 0\r\n"
        }
        head += "\r\n"
        return Array(head.utf8)
    }

    private func takeIdleConnection(_ server: HTTPServerAddress) -> HTTPConnection? {
        idleSockets.withLock { $0[server.key]?.popLast() }.map(HTTPConnection.init(descriptor:))
    }

    private func putIdleConnection(_ connection: HTTPConnection, _ server: HTTPServerAddress) {
        guard let descriptor = connection.detachForReuse() else { return }
        let kept = idleSockets.withLock {
            guard $0[server.key, default: []].count < Self.maximumIdlePerServer else { return false }
            $0[server.key, default: []].append(descriptor)
            return true
        }
        if !kept { Glibc.close(descriptor) }
    }
}

struct HTTPServerAddress: CustomStringConvertible {
    var host: String
    var port: Int

    var key: String { "\(host):\(port)" }
    var description: String { key }
    var hostHeader: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// One TCP connection speaking HTTP/1.1; non-blocking, every wait bounded by a deadline.
final class HTTPConnection {
    enum Failure: Error {
        /// The connection ended before any byte of an answer arrived.
        case closedBeforeAnswer
    }

    private var descriptor: Int32
    private var buffer: [UInt8] = []
    private var readOffset = 0
    /// Where `recv` writes, kept for the connection's life: a fresh zeroed array per read costs
    /// more than the read on large answers.
    private var chunk = [UInt8](repeating: 0, count: 16_384)

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { close() }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    /// Hands the socket over for another request: its descriptor if the answer was read to the
    /// end (nothing buffered); otherwise closes it and returns nil.
    func detachForReuse() -> Int32? {
        guard available == 0, descriptor >= 0 else {
            close()
            return nil
        }
        defer { descriptor = -1 }
        return descriptor
    }

    static func open(_ server: HTTPServerAddress, deadline: UInt64) throws -> HTTPConnection {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(server.host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), String(server.port), &hints, &list)
        guard status == 0, let first = list else {
            throw RecordClientError.unreachable("cannot reach the server at \(server): cannot resolve \(server.host)")
        }
        defer { freeaddrinfo(list) }
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            let socketDescriptor = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socketDescriptor >= 0 else { continue }
            let connection = HTTPConnection(descriptor: socketDescriptor)
            _ = fcntl(socketDescriptor, F_SETFL, fcntl(socketDescriptor, F_GETFL) | O_NONBLOCK)
            var one: Int32 = 1
            setsockopt(socketDescriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let result = connect(socketDescriptor, address.pointee.ai_addr, address.pointee.ai_addrlen)
            if result == 0 { return connection }
            guard errno == EINPROGRESS else { continue }
            guard try connection.wait(for: Int16(POLLOUT), deadline: deadline, server: server) else { continue }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(socketDescriptor, SOL_SOCKET, SO_ERROR, &error, &length)
            if error == 0 { return connection }
        }
        throw RecordClientError.unreachable("cannot reach the server at \(server)")
    }

    /// Waits until the socket is ready; false when it reports an error or hang-up only.
    private func wait(for events: Int16, deadline: UInt64, server: HTTPServerAddress) throws -> Bool {
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { throw RecordClientError.unreachable("the server at \(server) did not answer in time") }
            var entry = pollfd(fd: descriptor, events: events, revents: 0)
            let milliseconds = Int32(min((deadline - now) / 1_000_000 + 1, 60_000))
            let ready = poll(&entry, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            if ready > 0 { return entry.revents & events != 0 || entry.revents & Int16(POLLHUP | POLLERR) == 0 }
        }
    }

    func write(_ bytes: [UInt8], deadline: UInt64, server: HTTPServerAddress) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written > 0 {
                offset += written
            } else if written < 0 && (errno == EAGAIN || errno == EINTR) {
                _ = try wait(for: Int16(POLLOUT), deadline: deadline, server: server)
            } else {
                throw Failure.closedBeforeAnswer
            }
        }
    }

    /// Reads more bytes into the buffer; false at the end of the stream.
    private func fill(deadline: UInt64, server: HTTPServerAddress) throws -> Bool {
        if readOffset > 0 && readOffset == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readOffset = 0
        }
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
                return true
            }
            if count == 0 { return false }
            guard errno == EAGAIN || errno == EINTR else { return false }
            _ = try wait(for: Int16(POLLIN), deadline: deadline, server: server)
        }
    }

    private var available: Int { buffer.count - readOffset }

    /// The next line without its CRLF.
    private func readLine(deadline: UInt64, server: HTTPServerAddress, answerStarted: Bool) throws -> String {
        while true {
            if let end = buffer[readOffset...].firstIndex(of: 0x0A) {
                var line = buffer[readOffset..<end]
                if line.last == 0x0D { line = line.dropLast() }
                readOffset = end + 1
                return String(decoding: line, as: UTF8.self)
            }
            guard available < 65_536 else { throw RecordClientError.invalidResponse("the server at \(server) sent a header line over 64 KB") }
            guard try fill(deadline: deadline, server: server) else {
                if !answerStarted && buffer.isEmpty { throw Failure.closedBeforeAnswer }
                throw RecordClientError.unreachable("the server at \(server) closed the connection mid-answer")
            }
        }
    }

    private func readBytes(_ count: Int, deadline: UInt64, server: HTTPServerAddress) throws -> ArraySlice<UInt8> {
        while available < count {
            guard try fill(deadline: deadline, server: server) else {
                throw RecordClientError.unreachable("the server at \(server) closed the connection mid-answer")
            }
        }
        defer { readOffset += count }
        return buffer[readOffset..<(readOffset + count)]
    }

    struct Answer {
        var status: Int
        var body: [UInt8]
        var keepAlive: Bool
    }

    func readResponse(deadline: UInt64, server: HTTPServerAddress) throws -> Answer {
        buffer.removeAll(keepingCapacity: true)
        readOffset = 0
        var statusLine = try readLine(deadline: deadline, server: server, answerStarted: false)
        var status = Self.status(of: statusLine)
        var headers: [String: String] = [:]
        while true {
            let line = try readLine(deadline: deadline, server: server, answerStarted: true)
            if line.isEmpty {
                // An interim 1xx answer: the real one follows.
                guard (100..<200).contains(status) else { break }
                statusLine = try readLine(deadline: deadline, server: server, answerStarted: true)
                status = Self.status(of: statusLine)
                headers = [:]
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        guard status > 0 else { throw RecordClientError.invalidResponse("the server at \(server) sent no HTTP status line") }
        var keepAlive = statusLine.hasPrefix("HTTP/1.1") && headers["connection"]?.lowercased().contains("close") != true
        var body: [UInt8] = []
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            while true {
                let sizeLine = try readLine(deadline: deadline, server: server, answerStarted: true)
                guard let size = Int(sizeLine.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) ?? "", radix: 16),
                      size >= 0
                else { throw RecordClientError.invalidResponse("the server at \(server) sent a malformed chunk size") }
                if size == 0 {
                    while try !readLine(deadline: deadline, server: server, answerStarted: true).isEmpty {}
                    break
                }
                body.append(contentsOf: try readBytes(size, deadline: deadline, server: server))
                _ = try readLine(deadline: deadline, server: server, answerStarted: true)
            }
        } else if let lengthText = headers["content-length"] {
            guard let length = Int(lengthText), length >= 0 else {
                throw RecordClientError.invalidResponse("the server at \(server) sent Content-Length \(lengthText)")
            }
            body = Array(try readBytes(length, deadline: deadline, server: server))
        } else if status != 204 && status != 304 {
            // No length: the answer ends with the connection.
            keepAlive = false
            body = Array(buffer[readOffset...])
            readOffset = buffer.count
            while try fill(deadline: deadline, server: server) {
                body.append(contentsOf: buffer[readOffset...])
                readOffset = buffer.count
            }
        }
        if available > 0 { keepAlive = false }  // bytes nobody asked for: do not reuse
        if let coding = headers["content-encoding"]?.lowercased(), coding != "identity" {
            guard coding == "gzip" || coding == "x-gzip" else {
                throw RecordClientError.invalidResponse("the server at \(server) sent an answer in Content-Encoding \(coding)")
            }
            do {
                body = try Gzip.decompress(body, limit: SocketTransport.maximumAnswerBytes)
            } catch {
                throw RecordClientError.invalidResponse("the server at \(server) sent a broken gzip answer: \(error)")
            }
        }
        return Answer(status: status, body: body, keepAlive: keepAlive)
    }

    private static func status(of line: String) -> Int {
        let parts = line.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/") else { return 0 }
        return Int(parts[1]) ?? 0
    }
}
