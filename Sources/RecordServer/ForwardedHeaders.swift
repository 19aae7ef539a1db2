import Foundation
import HTTPTypes
#if canImport(Glibc)
import Glibc
#endif

/// An address range, `10.0.0.0/8` or `fd00::/8` (a bare address is a range of one).
package struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    let network: [UInt8]
    let prefixLength: Int
    package let description: String

    /// Parses `ADDRESS[/BITS]`, IPv4 or IPv6; nil when it is neither.
    package init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard let address = AddressRange.bytes(parts[0]) else { return nil }
        let bits = address.count * 8
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...bits).contains(length), parts[1].allSatisfy(\.isASCII) else { return nil }
            prefixLength = length
        } else {
            prefixLength = bits
        }
        network = address
        description = text
    }

    func contains(_ address: [UInt8]) -> Bool {
        guard address.count == network.count else { return false }
        var remaining = prefixLength
        for (a, b) in zip(address, network) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if a & mask != b & mask { return false }
            remaining -= 8
        }
        return true
    }

    /// The address's bytes: 4 for IPv4 (an IPv4-mapped IPv6 address included), 16 for IPv6.
    static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }
}

/// Who a request came from and how it reached the daemon. `X-Forwarded-For`, `-Proto` and `-Host`
/// are believed only from a peer in `trustedProxies` (`serve --trusted-proxy`): from anyone else
/// they are ignored, so a client cannot choose the address it is logged and rate-limited as, or
/// the host of the links the daemon hands out.
package struct RequestOrigin: Sendable, Equatable {
    /// The client's address: the peer's, or the nearest untrusted address a trusted proxy forwarded.
    package var clientAddress: String?
    /// `https` when a trusted proxy says the client used it.
    package var scheme: String?
    /// The host the client asked for, as a trusted proxy forwarded it.
    package var host: String?

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let forwardedHost = HTTPField.Name("X-Forwarded-Host")!

    package init(peer: String?, headers: HTTPFields, trustedProxies: [AddressRange]) {
        clientAddress = peer
        guard let peer, let peerBytes = AddressRange.bytes(peer), trustedProxies.contains(where: { $0.contains(peerBytes) }) else { return }
        // The chain reads client, proxy, proxy…: the client is the last address no trusted proxy holds.
        let chain = headers[values: RequestOrigin.forwardedFor].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if !chain.isEmpty, chain.allSatisfy({ AddressRange.bytes($0) != nil }) {
            clientAddress = chain.last { address in !trustedProxies.contains { $0.contains(AddressRange.bytes(address)!) } } ?? chain.first
        }
        if let proto = RequestOrigin.firstValue(headers[RequestOrigin.forwardedProto])?.lowercased(), proto == "https" || proto == "http" {
            scheme = proto
        }
        if let host = RequestOrigin.firstValue(headers[RequestOrigin.forwardedHost]), !host.isEmpty, host.count <= 255,
            host.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || ".-:[]".unicodeScalars.contains($0)) })
        {
            self.host = host
        }
    }

    static func firstValue(_ header: String?) -> String? {
        header?.split(separator: ",", omittingEmptySubsequences: false).first.map { $0.trimmingCharacters(in: .whitespaces) }
    }
}
