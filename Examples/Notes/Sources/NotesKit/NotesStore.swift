import Foundation
import RecordSync

/// The app's store: the zone its data lives in and its entity types.
public enum NotesStore {
    /// The zone (one per account) the notes live in.
    public static let zone = "Notes"
    public static let entityTypes: [any SyncedEntity.Type] = [Folder.self, Note.self]

    /// Opens (creating if needed) the notes store at `path`.
    public static func open(path: String) throws(RecordSyncError) -> SyncStore {
        try SyncStore(path: path, zone: zone, entityTypes: entityTypes)
    }
}
