import Crypto
import Foundation
import RecordModel

/// The database whose assets share one content store (identical bytes in one
/// database are stored once): a user's private database (which its shared zones belong to) or a
/// container's public database.
package struct AssetScope: Sendable, Hashable {
    package var container: String
    package var environment: Environment
    /// The owner of the zone the asset is attached in (`__defaultOwner__` for the public database).
    package var ownerRecordName: String

    package init(container: String, environment: Environment, ownerRecordName: String) {
        self.container = container
        self.environment = environment
        self.ownerRecordName = ownerRecordName
    }

    /// The scope of a zone as `scope`'s caller addresses it (a shared zone names its owner).
    package init(_ scope: DatabaseScope, zone: ZoneID) {
        let owner: String
        switch scope.kind {
        case .private: owner = scope.userRecordName
        case .shared: owner = zone.ownerRecordName ?? ""
        case .public: owner = DatabaseScope.publicOwnerRecordName
        }
        self.init(container: scope.container, environment: scope.environment, ownerRecordName: owner)
    }

    /// The key stored in the asset tables.
    package var key: String { "\(container)\u{1F}\(environment.rawValue)\u{1F}\(ownerRecordName)" }

    /// A file-system-safe name for the scope's directory (container names may be `..`).
    package var directoryName: String { AssetScope.directoryName(forKey: key) }

    package static func directoryName(forKey key: String) -> String {
        String(AssetChecksum.hex(SHA256.hash(data: Array(key.utf8))).prefix(32))
    }
}

/// What an upload URL and its receipt are bound to: who, which database, zone, record and field.
package struct AssetBinding: Sendable, Hashable {
    package var database: DatabaseKind
    package var zoneName: String
    package var recordName: String
    package var fieldName: String

    package init(database: DatabaseKind, zoneName: String, recordName: String, fieldName: String) {
        self.database = database
        self.zoneName = zoneName
        self.recordName = recordName
        self.fieldName = fieldName
    }

    /// The key stored in `asset_uploads.binding` (record names are printable ASCII: no U+001F).
    package var key: String { [database.rawValue, zoneName, recordName, fieldName].joined(separator: "\u{1F}") }
}

/// One upload URL and, once its bytes arrived, its receipt.
package struct AssetUpload: Sendable, Equatable {
    /// The secret in the upload URL.
    package var id: String
    package var userID: Int64
    package var scopeKey: String
    package var bindingKey: String
    package var createdAt: Int64
    package var claimedAt: Int64?
    /// Hex SHA-256 of the bytes received.
    package var checksum: String?
    package var size: Int64?
    package var receipt: String?
    package var uploadedAt: Int64?
    package var attachedAt: Int64?

    package init(id: String, userID: Int64, scopeKey: String, bindingKey: String, createdAt: Int64) {
        self.id = id
        self.userID = userID
        self.scopeKey = scopeKey
        self.bindingKey = bindingKey
        self.createdAt = createdAt
    }
}

/// Stored bytes: one per (scope, checksum).
package struct AssetBlob: Sendable, Equatable {
    package var scopeKey: String
    /// Hex SHA-256.
    package var checksum: String
    package var size: Int64

    package init(scopeKey: String, checksum: String, size: Int64) {
        self.scopeKey = scopeKey
        self.checksum = checksum
        self.size = size
    }
}

/// The limits and lifetimes of uploaded assets.
package enum AssetLimits {
    package static let maximumBytes: Int64 = 50 * 1024 * 1024
    /// An upload URL takes one upload within this time.
    package static let uploadURLMilliseconds: Int64 = 15 * 60_000
    /// A receipt attaches within this time; bytes never attached are removed some time after it.
    package static let receiptMilliseconds: Int64 = 24 * 3_600_000
    /// Unattached bytes go an hour after their receipt expired, so a save that checked a receipt
    /// just before expiry never finds its bytes gone.
    package static let unattachedMilliseconds: Int64 = 25 * 3_600_000
    /// A download URL works this long.
    package static let downloadURLMilliseconds: Int64 = 2 * 3_600_000
    /// PostgreSQL keeps an asset's bytes in rows of this size (small enough that 20 transfers at
    /// once hold little of it in memory, large enough that a 50 MB asset is 200 rows).
    package static let chunkBytes = 256 * 1024

    /// What a download answers when a record's stored bytes are gone or shorter than recorded, on
    /// either backend: the server lost data the record still names (`scorebookd check` reports it).
    package static func missingBytes() -> ServerError {
        ServerError(.internalError, "the asset's stored bytes are missing; scorebookd check reports the damage")
    }
}

/// `fileChecksum` on the wire is the base64 SHA-256 of the bytes; tables and file names hold hex.
package enum AssetChecksum {
    package static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 { SHA256Hasher.hex(Array(digest)) }

    package static func wire(hex: String) -> String { SHA256Hasher.bytes(hex: hex).map { Data($0).base64EncodedString() } ?? "" }

    /// The hex form of a wire checksum, or nil when it is not a base64 SHA-256.
    package static func hex(wire: String) -> String? {
        guard let data = Data(base64Encoded: wire), data.count == 32 else { return nil }
        return hex(data)
    }
}

/// The asset values a record's fields hold.
package enum AssetFields {
    /// Whether a stored fields dictionary may hold an asset (a cheap test before parsing: every
    /// record of every answer passes here). Stored fields always carry their type, so an asset's
    /// is spelled `"ASSETID` unescaped.
    package static func mayHoldAssets(_ fieldsJSON: [UInt8]) -> Bool {
        fieldsJSON.withUnsafeBytes { mayHoldAssets($0) }
    }

    package static func mayHoldAssets(_ fieldsJSON: UnsafeRawBufferPointer) -> Bool {
        ByteSearch.offset(past: assetMarker, in: fieldsJSON.assumingMemoryBound(to: UInt8.self), from: 0) != nil
    }

    private static let assetMarker = Array(#""ASSETID"#.utf8)

    /// (field name, hex checksum) of every asset in a stored fields dictionary.
    package static func checksums(inFieldsJSON fieldsJSON: [UInt8]) -> [(field: String, checksum: String)] {
        guard mayHoldAssets(fieldsJSON), let fields = try? JSONValue.parse(fieldsJSON).objectValue else { return [] }
        var found: [(String, String)] = []
        for (name, field) in fields {
            for value in assetValues(field) {
                if let wire = value["fileChecksum"]?.stringValue, let hex = AssetChecksum.hex(wire: wire) { found.append((name, hex)) }
            }
        }
        return found
    }

    /// The asset dictionaries of one field (`{"type", "value"}`): one for ASSETID, each for ASSETID_LIST.
    package static func assetValues(_ field: JSONValue) -> [JSONValue] {
        guard let type = field["type"]?.stringValue, let value = field["value"] else { return [] }
        switch type {
        case "ASSETID": return [value]
        case "ASSETID_LIST": return value.arrayValue ?? []
        default: return []
        }
    }
}

/// Hashes and counts bytes as they stream past.
package struct AssetDigest {
    private var hasher = SHA256()
    package private(set) var size: Int64 = 0

    package init() {}

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        hasher.update(bufferPointer: bytes)
        size += Int64(bytes.count)
    }

    package func finish() -> String { AssetChecksum.hex(hasher.finalize()) }
}

/// How records written during one request link their assets: set (as a task-local) by the API
/// around each request, so every answer that carries records — lookups, queries, feeds, batch
/// answers — gives each asset a `downloadURL` for that caller without each route knowing.
package struct AssetLinks: Sendable {
    /// The URL of one asset: (the record, its field, the asset's hex checksum).
    package var downloadURL: @Sendable (_ record: StoredRecord, _ fieldName: String, _ checksum: String) -> String

    package init(downloadURL: @escaping @Sendable (_ record: StoredRecord, _ fieldName: String, _ checksum: String) -> String) {
        self.downloadURL = downloadURL
    }

    @TaskLocal package static var current: AssetLinks?

    /// The field with `downloadURL` added to each asset value (other fields unchanged).
    func linked(_ field: JSONValue, fieldName: String, of record: StoredRecord) -> JSONValue {
        guard case .object(var members) = field, let type = members["type"]?.stringValue, let value = members["value"] else { return field }
        func link(_ asset: JSONValue) -> JSONValue {
            guard case .object(var dictionary) = asset, let wire = dictionary["fileChecksum"]?.stringValue,
                let hex = AssetChecksum.hex(wire: wire)
            else { return asset }
            dictionary["downloadURL"] = .string(downloadURL(record, fieldName, hex))
            return .object(dictionary)
        }
        switch type {
        case "ASSETID": members["value"] = link(value)
        case "ASSETID_LIST": members["value"] = .array((value.arrayValue ?? []).map(link))
        default: return field
        }
        return .object(members)
    }
}
