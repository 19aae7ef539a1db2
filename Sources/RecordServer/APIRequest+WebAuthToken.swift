import Foundation
import RecordStore

extension APIRequest {
    /// The user's token in a CloudKit-style query string: `ckWebAuthToken`, or `ckSession`, the
    /// name CloudKit JS 1.x gives the same token.
    var webAuthToken: String? { query["ckWebAuthToken"] ?? query["ckSession"] }

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
