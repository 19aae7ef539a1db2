import Foundation
import Glibc
import Synchronization

/// A loopback HTTP server that answers each request with what `script` returns (nil: close
/// the connection without answering). Requests must carry a Content-Length or no body.
public final class ScriptedServer: Sendable {
    private struct Connections {
        var stopped = false
        var open: [Int32] = []
        var requests: [String] = []
        var count = 0
    }

    public let port: Int
    private let listener: Int32
    private let connections = Mutex(Connections())
    /// Signalled by the accept thread once it has closed the listener (see `stop`).
    private let acceptLoopEnded = DispatchSemaphore(value: 0)
    public var requests: [String] { connections.withLock { $0.requests } }
    public var connectionCount: Int { connections.withLock { $0.count } }
    /// Set before the accept thread starts, so it never races with a connection.
    public let silent: Bool
    private let script: @Sendable (_ request: [UInt8], _ connection: Int, _ request: Int) -> String?

    public init(silent: Bool = false, script: @escaping @Sendable (_ request: [UInt8], _ connection: Int, _ request: Int) -> String?) throws {
        self.silent = silent
        self.script = script
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        listen(descriptor, 16)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    public static func unusedPort() throws -> Int {
        let server = try ScriptedServer { _, _, _ in nil }
        server.stop()
        return server.port
    }

    public func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Shuts the listener down and waits for the accept thread to close it. Closing it here would
    /// free its descriptor number while that thread may still be about to call `accept` on it: the
    /// next server's listener can get the same number, and the old thread would then take (and
    /// drop) that server's first connection.
    public func stop() {
        let alreadyStopped = connections.withLock { state in
            defer { state.stopped = true }
            return state.stopped
        }
        guard !alreadyStopped else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        _ = acceptLoopEnded.wait(timeout: .now() + 5)
        dropConnections()
    }

    public func dropConnections() {
        let open = connections.withLock { $0.open }
        for connection in open { shutdown(connection, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        defer {
            close(listener)
            acceptLoopEnded.signal()
        }
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0, !connections.withLock({ $0.stopped }) else {
                if connection >= 0 { close(connection) }
                return
            }
            let index = connections.withLock {
                $0.open.append(connection)
                $0.count += 1
                return $0.count - 1
            }
            Thread { [self] in serve(connection, index) }.start()
        }
    }

    private func serve(_ connection: Int32, _ connectionIndex: Int) {
        defer {
            connections.withLock { $0.open.removeAll { $0 == connection } }
            close(connection)
        }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var requestIndex = 0
        for _ in 0..<100 {
            // One request: the head, then Content-Length bytes.
            var request: [UInt8]?
            while request == nil {
                if let end = Self.headEnd(buffer) {
                    let head = String(decoding: buffer[..<end], as: UTF8.self).lowercased()
                    let length = head.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) } ?? 0
                    if buffer.count >= end + 4 + length {
                        request = Array(buffer[..<(end + 4 + length)])
                        buffer.removeFirst(end + 4 + length)
                        break
                    }
                }
                let count = recv(connection, &chunk, chunk.count, 0)
                guard count > 0 else { return }
                buffer.append(contentsOf: chunk[..<count])
            }
            guard let request else { return }
            connections.withLock { $0.requests.append(String(decoding: request, as: UTF8.self)) }
            if silent {
                while recv(connection, &chunk, chunk.count, 0) > 0 {}  // until the client gives up
                return
            }
            guard let answer = script(request, connectionIndex, requestIndex) else { return }
            requestIndex += 1
            let bytes = Array(answer.utf8)
            _ = bytes.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if answer.lowercased().contains("connection: close") { return }
        }
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
