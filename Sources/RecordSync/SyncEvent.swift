import Foundation
import Synchronization

/// What a `SyncStore` tells its listeners (`SyncStore.events()`).
public enum SyncEvent: Sendable {
    /// A record saved by another machine (or merged with one) was applied here.
    case changed(ChangedEntity)
    /// A record was deleted here because another machine deleted it (or a record it needs).
    case deleted(DeletedEntity)
    /// A field edited here and on another machine to different values: what was kept.
    case conflictResolved(ConflictDetail)
    /// An edit made here will never reach the server: another machine deleted its record.
    case dropped(DroppedChange)
    /// The store's account changed (nil: logged out).
    case accountChanged(SyncAccount?)
    /// The store started or stopped syncing or watching, or a sync failed.
    case stateChanged(SyncState)
    /// Counts sent and received so far in the running sync.
    case progress(SyncProgress)
    /// The watch met a problem it keeps retrying through (the server unreachable, say).
    case problem(String)
}

/// Where a store stands.
public enum SyncState: Sendable, Equatable {
    case idle
    case syncing
    case watching
    case failed(RecordSyncError)
}

/// A record another machine saved, with its entity when the store knows the type.
public struct ChangedEntity: Sendable {
    /// The zone (book) the record is in.
    public var zone: String
    public var record: Record
    /// The record as one of the store's entity types; nil for a type the store was not given.
    public var entity: (any SyncedEntity)?

    /// The entity as `type`, when it is one.
    public func entity<E: SyncedEntity>(as type: E.Type) -> E? { self.entity as? E }
    public var recordName: String { record.recordName }
    public var recordType: String { record.recordType }
    /// Who last wrote the record (a user record name), when the server said.
    public var writer: String? { record.modified?.userRecordName }
}

/// A record deleted here because another machine deleted it. The record is gone; its type is
/// known from its bare name (`Type|~|UUID`).
public struct DeletedEntity: Sendable {
    public var zone: String
    public var recordName: String
    public var recordType: String
    /// The store's entity type for `recordType`, if it was given one.
    public var entityType: (any SyncedEntity.Type)?
    /// Who deleted it (a user record name), when the tombstone said.
    public var deletedBy: String?

    /// Whether the deleted record was an entity of `type`.
    public func `is`<E: SyncedEntity>(_ type: E.Type) -> Bool { recordType == E.recordType }
}

/// The listeners of one store: each `events()` call adds one, ended when its consumer stops.
final class EventHub: Sendable {
    private let listeners = Mutex<[UInt64: AsyncStream<SyncEvent>.Continuation]>([:])
    private let nextID = Atomic<UInt64>(0)

    func stream() -> AsyncStream<SyncEvent> {
        let (stream, continuation) = AsyncStream<SyncEvent>.makeStream(bufferingPolicy: .unbounded)
        let id = nextID.add(1, ordering: .relaxed).newValue
        continuation.onTermination = { [weak self] _ in
            _ = self?.listeners.withLock { $0.removeValue(forKey: id) }
        }
        listeners.withLock { $0[id] = continuation }
        return stream
    }

    /// Whether anyone listens: a first sync of many records builds no events for nobody.
    var hasListeners: Bool { listeners.withLock { !$0.isEmpty } }

    func send(_ event: SyncEvent) {
        for continuation in listeners.withLock({ Array($0.values) }) { continuation.yield(event) }
    }

    func finish() {
        for continuation in listeners.withLock({ Array($0.values) }) { continuation.finish() }
    }
}
