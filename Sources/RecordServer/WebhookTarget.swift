import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import RecordModel

/// A webhook's URL as the delivery client uses it, and the rule on where deliveries may go:
/// loopback, link-local and private addresses are refused unless the daemon allows them
/// (`serve --allow-private-webhooks`), so a user who may register an endpoint cannot make the
/// daemon post to services on its own host or network.
package struct WebhookTarget: Sendable, Equatable {
    package var isHTTPS: Bool
    package var host: String
    package var port: Int
    /// The path and query the POST asks for.
    package var requestTarget: String

    /// Parses `http(s)://HOST[:PORT]/PATH`; anything else is `BAD_REQUEST`.
    package init(url text: String) throws {
        guard text.utf8.count <= 2048, let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", var host = url.host, !host.isEmpty
        else { throw ServerError.badRequest("a webhook URL must be http:// or https:// with a host (got '\(text)')") }
        guard url.user == nil, url.password == nil else { throw ServerError.badRequest("a webhook URL cannot carry a user or password") }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        isHTTPS = scheme == "https"
        self.host = host
        port = url.port ?? (isHTTPS ? 443 : 80)
        let path = url.percentEncodedPath.isEmpty ? "/" : url.percentEncodedPath
        requestTarget = path + (url.percentEncodedQuery.map { "?" + $0 } ?? "")
    }

    /// The ranges a delivery is refused unless private targets are allowed: loopback, "this
    /// network", private (RFC 1918, IPv6 unique local), shared (carrier NAT) and link-local.
    static let privateRanges: [AddressRange] = [
        "127.0.0.0/8", "0.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16",
        "::1/128", "::/128", "fc00::/7", "fe80::/10",
    ].compactMap(AddressRange.init)

    /// Whether `address` (textual IPv4 or IPv6) is one `privateRanges` holds.
    static func isPrivate(_ address: String) -> Bool {
        guard let bytes = AddressRange.bytes(address) else { return true }
        return privateRanges.contains { $0.contains(bytes) }
    }

    /// Whether the host is written as a private address or `localhost`: refused at registration
    /// (a name that resolves to one is refused when delivering).
    package var namesPrivateHost: Bool {
        host.lowercased() == "localhost" || host.lowercased().hasSuffix(".localhost") || (AddressRange.bytes(host) != nil && Self.isPrivate(host))
    }

    /// The address to connect to: the host resolved once, and checked, so a name cannot resolve
    /// to a public address for the check and a private one for the connection.
    func resolve(allowPrivate: Bool) async throws -> SocketAddress {
        let (host, port) = (self.host, self.port)
        let address = try await NIOThreadPool.singleton.runIfActive { try SocketAddress.makeAddressResolvingHost(host, port: port) }
        if !allowPrivate, let ip = address.ipAddress, Self.isPrivate(ip) {
            throw WebhookDeliveryError("refused: \(host) is a loopback, link-local or private address (the daemon needs --allow-private-webhooks)")
        }
        return address
    }
}

/// Why an attempt failed before an HTTP status came back (one line, for `webhook deliveries`).
struct WebhookDeliveryError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Standard Webhooks signing: `v1,` and the base64 of HMAC-SHA256 over `{id}.{timestamp}.{body}`
/// keyed with the secret's decoded bytes.
package enum WebhookSignature {
    package static func sign(id: String, timestamp: Int64, body: [UInt8], key: [UInt8]) -> String {
        var message = Array("\(id).\(timestamp).".utf8)
        message += body
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
        return "v1," + Data(code).base64EncodedString()
    }
}

/// One attempt's answer.
struct WebhookResponse {
    /// 0 when no status came back.
    var status: Int
    var error: String?
    /// Whether the connection can carry the next event.
    var reusable: Bool
}

/// POSTs over one HTTP/1.1 connection at a time, kept open for the events of one stream. The
/// answer's head decides; of its body at most `bodyLimit` bytes are read (a larger one closes the
/// connection), and a redirect is a failure like any other non-2xx status.
struct WebhookConnection {
    static let bodyLimit = 16 * 1024
    /// The TLS context of every https delivery (the system's trust roots); nil if it cannot be made.
    static let tlsContext: NIOSSLContext? = try? NIOSSLContext(configuration: .makeClientConfiguration())
    static let userAgent = "scorebookd-webhooks/\(ProductVersion.current)"

    /// Connects to the target and runs `body` with a way to post on the connection; the connection
    /// closes when `body` returns.
    static func open(_ target: WebhookTarget, allowPrivate: Bool, timeout: TimeAmount, _ body: (inout Exchange) async throws -> Void) async throws {
        let address = try await target.resolve(allowPrivate: allowPrivate)
        let tls: NIOSSLContext?
        if target.isHTTPS {
            guard let context = tlsContext else { throw WebhookDeliveryError("TLS is not available") }
            tls = context
        } else {
            tls = nil
        }
        let serverName = AddressRange.bytes(target.host) == nil ? target.host : nil
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(timeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connect(to: address) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: serverName)) }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
        let raw = channel.channel
        try await channel.executeThenClose { inbound, outbound in
            var exchange = Exchange(channel: raw, iterator: inbound.makeAsyncIterator(), outbound: outbound, target: target, timeout: timeout)
            try await body(&exchange)
        }
    }

    struct Exchange {
        let channel: any Channel
        var iterator: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
        let outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>
        let target: WebhookTarget
        let timeout: TimeAmount

        /// Posts one signed event and reads the answer, within the timeout (past it the connection
        /// is closed, and the attempt failed).
        mutating func post(body: [UInt8], eventID: String, signature: String, timestamp: Int64) async -> WebhookResponse {
            var headers = HTTPHeaders()
            let defaultPort = target.isHTTPS ? 443 : 80
            let hostHeader = target.host.contains(":") ? "[\(target.host)]" : target.host
            headers.add(name: "Host", value: target.port == defaultPort ? hostHeader : "\(hostHeader):\(target.port)")
            headers.add(name: "User-Agent", value: WebhookConnection.userAgent)
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(body.count))
            headers.add(name: "webhook-id", value: eventID)
            headers.add(name: "webhook-timestamp", value: String(timestamp))
            headers.add(name: "webhook-signature", value: signature)
            let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: target.requestTarget, headers: headers)
            let channel = self.channel
            let seconds = Double(timeout.nanoseconds) / 1e9
            let started = ContinuousClock.now
            let timer = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
            defer { timer.cancel() }
            do {
                try await outbound.write(contentsOf: [.head(head), .body(.byteBuffer(ByteBuffer(bytes: body))), .end(nil)])
                var status = 0
                var keepAlive = false
                var read = 0
                var excerpt: [UInt8] = []
                while let part = try await iterator.next() {
                    switch part {
                    case .head(let response):
                        status = Int(response.status.code)
                        keepAlive = response.isKeepAlive
                    case .body(let buffer):
                        read += buffer.readableBytes
                        if excerpt.count < 200 { excerpt += buffer.readableBytesView.prefix(200 - excerpt.count) }
                        if read > WebhookConnection.bodyLimit {
                            return WebhookResponse(status: status, error: (200...299).contains(status) ? nil : Self.describe(status, excerpt),
                                                   reusable: false)
                        }
                    case .end:
                        let failed = !(200...299).contains(status)
                        return WebhookResponse(status: status, error: failed ? Self.describe(status, excerpt) : nil, reusable: keepAlive)
                    }
                }
                return WebhookResponse(status: 0, error: endedEarly(started, seconds), reusable: false)
            } catch {
                return WebhookResponse(status: 0, error: endedEarly(started, seconds), reusable: false)
            }
        }

        /// Why the connection ended without a full answer: the timer closed it, or the receiver did.
        private func endedEarly(_ started: ContinuousClock.Instant, _ seconds: Double) -> String {
            ContinuousClock.now - started >= .nanoseconds(timeout.nanoseconds) ? "no answer within \(seconds) s" : "connection closed before an answer"
        }

        static func describe(_ status: Int, _ excerpt: [UInt8]) -> String {
            let text = String(decoding: excerpt, as: UTF8.self).split(whereSeparator: \.isNewline).joined(separator: " ")
            let redirect = (300...399).contains(status) ? " (redirects are not followed)" : ""
            return "HTTP \(status)\(redirect)" + (text.isEmpty ? "" : ": \(text)")
        }
    }
}
