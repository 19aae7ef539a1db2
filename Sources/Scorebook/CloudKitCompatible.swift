import Foundation
import RecordSync

/// An entity as the CLI shows it: a `SyncedEntity` (what the sync needs, in RecordSync) with
/// the CLI's own concerns on top. Conforming a domain type (Entity+Presentation.swift) and
/// listing it in `Scorebook.entityTypes` is all it takes: the store, sync, deletions and output
/// find it there.
public protocol CloudKitCompatible: SyncedEntity {
    /// How the entity reads in lists and messages.
    var displayName: String { get }
    /// The names by which a person may refer to the entity on the command line.
    var referenceNames: [String] { get }
    /// The entity's own fields for `--json` output: camelCase keys, references as record names.
    var jsonFields: [String: JSONValue] { get }
}

extension CloudKitCompatible {
    public var referenceNames: [String] { [] }

    /// The entity as `--json` prints it.
    public var json: JSONValue {
        var members = jsonFields
        members["recordName"] = .string(recordName)
        members["recordType"] = .string(Self.recordType)
        members["modificationDate"] = .string(ISO8601.string(from: modificationDate))
        return .object(members)
    }
}
