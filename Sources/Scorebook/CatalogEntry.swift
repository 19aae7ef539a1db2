import Foundation
import RecordModel

/// A game in the container's public catalogue: published once by a club, added
/// to anyone's scorebook with `scorebook game add --from-catalog NAME`. Stored as a `CatalogGame`
/// record in the public database's `_defaultZone`.
public struct CatalogEntry: Equatable, Sendable {
    public static let recordType = "CatalogGame"

    public var recordName: String
    public var name: String
    public var lowScoreWins: Bool
    public var description: String
    /// The user who published it (only that user changes it).
    public var publisher: String?
    public var modificationDate: Date

    public init(name: String, lowScoreWins: Bool, description: String, modificationDate: Date = Date()) {
        self.recordName = CatalogEntry.recordName(forGameNamed: name)
        self.name = name
        self.lowScoreWins = lowScoreWins
        self.description = description
        self.modificationDate = modificationDate
    }

    /// One entry per game name, whatever its case: publishing a name again changes that entry.
    /// The record name is `CatalogGame|~|<UUID>` with a UUID derived from the
    /// lower-cased name (RFC 9562 version 8: two FNV-1a 64-bit hashes), so every machine finds it.
    public static func recordName(forGameNamed name: String) -> String {
        func fnv1a(_ bytes: [UInt8], seed: UInt64) -> UInt64 {
            bytes.reduce(seed) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        }
        let bytes = Array(name.trimmingCharacters(in: .whitespaces).lowercased().utf8)
        var value = [fnv1a(bytes, seed: 0xcbf2_9ce4_8422_2325), fnv1a(bytes, seed: 0x6c62_272e_07bb_0142)]
        value[0] = (value[0] & ~0xF000) | 0x8000  // version 8
        value[1] = (value[1] & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // RFC variant
        let hex = value.map { String($0, radix: 16, uppercase: true).leftPadded(to: 16) }.joined()
        let digits = Array(hex)
        let groups = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(digits[$0]) }
        return "\(recordType)|~|\(groups.joined(separator: "-"))"
    }

    public init?(record: Record) {
        guard record.recordType == CatalogEntry.recordType, let name = record.fields["name"]?.stringValue else { return nil }
        self.recordName = record.recordName
        self.name = name
        lowScoreWins = (record.fields["lowScoreWins"]?.int64Value ?? 0) != 0
        description = record.fields["description"]?.stringValue ?? ""
        publisher = record.created?.userRecordName
        modificationDate = record.fields["modificationDate"]?.dateValue ?? Date(timeIntervalSince1970: 0)
    }

    public var record: Record {
        Record(recordName: recordName, recordType: CatalogEntry.recordType, fields: [
            "name": .string(name), "lowScoreWins": .int64(lowScoreWins ? 1 : 0), "description": .string(description),
            "modificationDate": .date(modificationDate),
        ], zoneID: .default)
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "recordName": .string(recordName), "name": .string(name), "lowScoreWins": .bool(lowScoreWins),
            "description": .string(description),
        ]
        if let publisher { members["publisher"] = .string(publisher) }
        return .object(members)
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
