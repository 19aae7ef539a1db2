import RecordModel

/// A sync token names a position in one change log: a zone's (kind `z`) or a database's zone list
/// (kind `d`). It carries the store's identity so a token from another data directory is rejected,
/// and travels as base64 because some CloudKit clients decode it.
package struct SyncToken: Equatable {
    package enum Kind: String { case zone = "z", database = "d" }

    var kind: Kind
    var storeID: String
    var ownerID: Int64  // the zone's row id, or the database's
    var sequence: Int64

    var encoded: String { OpaqueToken.encode("\(kind.rawValue)1|\(storeID)|\(ownerID)|\(sequence)") }

    /// Reads a token; a malformed one is `BAD_REQUEST`.
    init(decoding token: String, expectedKind: Kind) throws {
        let parts = OpaqueToken.decode(token)?.split(separator: "|", omittingEmptySubsequences: false) ?? []
        guard parts.count == 4, parts[0] == "\(expectedKind.rawValue)1", let owner = Int64(parts[2]), let sequence = Int64(parts[3]),
            sequence >= 0
        else { throw ServerError.badRequest("syncToken is not a valid \(expectedKind == .zone ? "zone" : "database") sync token") }
        self.kind = expectedKind
        self.storeID = String(parts[1])
        self.ownerID = owner
        self.sequence = sequence
    }

    init(kind: Kind, storeID: String, ownerID: Int64, sequence: Int64) {
        self.kind = kind
        self.storeID = storeID
        self.ownerID = ownerID
        self.sequence = sequence
    }
}
