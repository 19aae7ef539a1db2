import Foundation
import RecordClient
import RecordModel
@testable import Scorebook
import Synchronization
import SyncEngine

/// A clock shared by every machine of a scenario: each reading is one millisecond later than
/// the last, so which of two edits is newer never depends on the host's clock.
final class EditClock: Sendable {
    private let milliseconds = Mutex<Int64>(1_800_000_000_000)

    func now() -> Date {
        let reading = milliseconds.withLock {
            $0 += 1
            return $0
        }
        return Date(timeIntervalSince1970: Double(reading) / 1000)
    }
}

/// Every edit made by every machine of a scenario, as seen inside the edit's own transaction:
/// the oracle the converged state is checked against.
final class EditLog: Sendable {
    struct Creation {
        var recordType: String
        var machine: Int
        /// Targets of the record's `DELETE_SELF` references: it cannot outlive them.
        var owners: [String]
    }

    private struct Entries {
        var created: [String: Creation] = [:]
        var deleted: Set<String> = []
        var lastWrite: [String: [String: [Int: FieldValue?]]] = [:]
        var everWritten: [String: [String: [FieldValue]]] = [:]
        var lines: [String] = []
    }

    private let entries = Mutex(Entries())

    var created: [String: Creation] { entries.withLock { $0.created } }
    /// Records deleted by some machine (named directly, or in the local cascade).
    var deleted: Set<String> { entries.withLock { $0.deleted } }
    /// Per record and field: the last value each machine wrote (nil: removed).
    var lastWrite: [String: [String: [Int: FieldValue?]]] { entries.withLock { $0.lastWrite } }
    /// Per record and field: every value any machine wrote.
    var everWritten: [String: [String: [FieldValue]]] { entries.withLock { $0.everWritten } }
    var lines: [String] { entries.withLock { $0.lines } }

    func note(_ line: String) { entries.withLock { $0.lines.append(line) } }

    /// Logs a save: `before` and `after` are the local copies around it, in its transaction.
    func saved(by machine: Int, before: Record?, after: Record) {
        entries.withLock { entries in
            if before == nil {
                let owners = after.references.filter { $0.reference.action == .deleteSelf }.map(\.reference.recordName)
                entries.created[after.recordName] = Creation(recordType: after.recordType, machine: machine, owners: owners)
            }
            var names = Set(after.fields.keys)
            if let before { names.formUnion(before.fields.keys) }
            for field in names where field != RecordMerge.modificationDateField {
                let old = before?.fields[field]
                let new = after.fields[field]
                guard before == nil || old != new else { continue }
                entries.lastWrite[after.recordName, default: [:]][field, default: [:]][machine] = .some(new)
                if let new { entries.everWritten[after.recordName, default: [:]][field, default: []].append(new) }
            }
        }
    }

    func deleted(_ names: [String]) { entries.withLock { $0.deleted.formUnion(names) } }

    /// Whether the record should be gone: it, or a record it cannot outlive, was deleted.
    func shouldBeGone(_ name: String) -> Bool {
        let (deleted, created) = entries.withLock { ($0.deleted, $0.created) }
        var seen: Set<String> = []
        func gone(_ name: String) -> Bool {
            if deleted.contains(name) { return true }
            guard seen.insert(name).inserted, let creation = created[name] else { return false }
            return creation.owners.contains(where: gone)
        }
        return gone(name)
    }
}

/// One client machine: a local store in a temporary file and a sync engine talking to the
/// in-process server through its own fault injector.
final class SyncMachine: Sendable {
    let index: Int
    let store: LocalRecordStore
    let transport: FaultyTransport
    let engine: ZoneSynchronizer
    let clock: EditClock
    let log: EditLog

    init(index: Int, directory: URL, api: InProcessTransport, token: String, seed: UInt64, rates: FaultRates, clock: EditClock,
         log: EditLog) throws
    {
        self.index = index
        self.clock = clock
        self.log = log
        store = try LocalRecordStore(path: directory.appendingPathComponent("machine\(index).sqlite").path)
        transport = FaultyTransport(api, seed: seed, rates: rates)
        let endpoint = ServerEndpoint(baseURL: URL(string: "http://\(InProcessTransport.host)")!, token: token)
        let box = SleepBox()
        engine = ZoneSynchronizer(
            store: store, database: RecordClient(endpoint: endpoint, transport: transport), zoneID: Scorebook.zoneID,
            retryPolicy: RetryPolicy(maximumAttempts: 4, baseDelay: 0.01, maximumDelay: 0.05),
            sleep: { seconds in
                // The engine's waits (retryAfter up to 1 s) are counted, not waited out.
                box.add(seconds)
                try await Task.sleep(nanoseconds: UInt64(min(max(seconds, 0), 0.002) * 1e9))
            })
        sleepBox = box
    }

    private let sleepBox: SleepBox
    /// Seconds the engine asked to wait (back-off and `retryAfter`).
    var secondsOfBackOff: Double { sleepBox.total }

    // MARK: Reading

    /// Every local record of the Scorebook types, by name.
    func records() throws -> [String: Record] {
        var result: [String: Record] = [:]
        for type in Scorebook.entityTypes {
            for record in try store.records(ofType: type.recordType) { result[record.recordName] = record }
        }
        return result
    }

    func entities<E: CloudKitCompatible>(_ type: E.Type) throws -> [E] {
        try store.records(ofType: E.recordType).compactMap { try? E(record: $0) }
    }

    // MARK: Edits, each one local transaction, logged from inside it

    func save(_ entities: [any CloudKitCompatible], _ editor: LocalEditor) throws {
        for entity in entities {
            let record = Scorebook.localRecord(of: entity)
            let before = try editor.record(named: record.recordName)
            try editor.save(record)
            if let after = try editor.record(named: record.recordName) { log.saved(by: index, before: before, after: after) }
        }
    }

    /// Saves new entities whose owners must still exist locally; false if one is gone.
    @discardableResult
    func create(_ entities: [any CloudKitCompatible], requiring owners: [String]) throws -> Bool {
        try store.edit { editor in
            for owner in owners where try editor.record(named: owner) == nil { return false }
            try save(entities, editor)
            return true
        }
    }

    /// Reads an entity, changes it, saves it; false if it is gone.
    @discardableResult
    func change<E: CloudKitCompatible>(_ type: E.Type, _ name: String, _ body: (inout E) -> Void) throws -> Bool {
        try store.edit { editor in
            guard let record = try editor.record(named: name), var entity = try? E(record: record) else { return false }
            body(&entity)
            entity.modificationDate = clock.now()
            try save([entity], editor)
            return true
        }
    }

    /// Deletes a record and its local cascade.
    @discardableResult
    func delete(_ name: String) throws -> [String] {
        try store.edit { editor in
            let names = try editor.delete(recordNamed: name).map(\.recordName)
            log.deleted(names)
            return names
        }
    }
}

/// Adds up the engine's requested waits across tasks.
final class SleepBox: Sendable {
    private let seconds = Mutex(0.0)

    func add(_ value: Double) { seconds.withLock { $0 += value } }

    var total: Double { seconds.withLock { $0 } }
}
