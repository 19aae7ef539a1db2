import Foundation
import RecordStore

extension RequestFacts {
    /// The user's token in a CloudKit-style query string: `ckWebAuthToken`, or `ckSession`, the
    /// name CloudKit JS 1.x gives the same token, else the `X-Apple-CloudKit-Web-Auth-Token`
    /// header. A value that names no token (see `namesAToken`) is no token: CloudKit JS sends
    /// `ckSession=null` before sign-in.
    var webAuthToken: String? {
        [query["ckWebAuthToken"], query["ckSession"], webAuthTokenHeader].lazy.compactMap { $0 }.first(where: RequestFacts.namesAToken)
    }

    /// Whether a `ckWebAuthToken` or `ckSession` value is a token at all: CloudKit JS 1.x writes a
    /// missing session into every request as the text `null` (or `undefined`), and an empty one
    /// is no more a token, so all three count as not given.
    static func namesAToken(_ value: String) -> Bool {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        return !trimmed.isEmpty && trimmed != "null" && trimmed != "undefined"
    }

    /// The hash of the user token the request authenticates with (`Authorization: Bearer`, else
    /// the query string's), as the store keeps it; nil without one.
    var userTokenHash: String? {
        if let header = authorization {
            let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
            return TokenHash.hex(parts[1].trimmingCharacters(in: .whitespaces))
        }
        return webAuthToken.map(TokenHash.hex)
    }
}
