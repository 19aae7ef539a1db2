import Foundation
import RecordClient
import RecordModel
import Synchronization
import SyncEngine

/// An in-memory server for one user's private database with the semantics the sync engine
/// relies on: change tags, CONFLICT with the server copy, DELETE_SELF
/// cascades, VALIDATING_REFERENCE_ERROR, a change feed with moreComing, zones.
final class MemoryCloudDatabase: CloudDatabase {
    /// Everything the server holds, changed only under `state`'s lock.
    fileprivate struct State {
        var zones: Set<String> = []
        var records: [String: Record] = [:]
        /// The change log: sequence → record name; the latest entry per name is its state.
        var changeLog: [(sequence: Int, name: String, type: String)] = []
        var sequence = 0
        var tagCounter = 0
        var notifications: [(cursor: Int, notification: PushNotification)] = []
        var pageSize = 3
        var modifyFailures: [ServerError] = []
        /// Tokens carry this epoch; tokens of an earlier one are answered with CHANGE_TOKEN_EXPIRED.
        var tokenEpoch = 0
        var modifyCalls = 0
        var operationsReceived: [RecordOperation] = []
    }

    let userRecordName: String
    private let state = Mutex(State())

    /// Records per changes/zone page, small so tests cross pages.
    var pageSize: Int {
        get { locked { $0.pageSize } }
        set { locked { $0.pageSize = newValue } }
    }
    /// Whole-request errors to answer the next modify calls with, in order.
    var modifyFailures: [ServerError] {
        get { locked { $0.modifyFailures } }
        set { locked { $0.modifyFailures = newValue } }
    }
    /// Counts of calls, for assertions.
    var modifyCalls: Int { locked { $0.modifyCalls } }
    var operationsReceived: [RecordOperation] { locked { $0.operationsReceived } }

    init(userRecordName: String = "_user") {
        self.userRecordName = userRecordName
    }

    private func locked<T: Sendable, Failure: Error>(_ body: (inout State) throws(Failure) -> T) throws(Failure) -> T {
        try state.withLock { state throws(Failure) -> T in try body(&state) }
    }

    /// The records the server holds now.
    var allRecords: [String: Record] { locked { $0.records } }

    func deleteZone(_ name: String) {
        locked {
            $0.zones.remove(name)
            $0.records.removeAll()
            $0.changeLog.removeAll()
        }
    }

    /// Forgets tombstones, as the server does after the retention period; the tokens handed
    /// out so far expire.
    func purgeTombstonesAndExpireTokens() {
        locked { state in
            state.changeLog.removeAll { state.records[$0.name] == nil }
            state.tokenEpoch += 1
        }
    }

    /// Saves a record as another machine would (for tests that need a concurrent edit).
    func saveAsOtherMachine(_ record: Record) {
        locked { state in
            var stored = record
            stored.recordChangeTag = state.nextTag()
            state.records[record.recordName] = stored
            state.logChange(record.recordName, type: record.recordType)
        }
    }

    func currentUserRecordName() async throws -> String { userRecordName }

    func createZone(_ zoneID: ZoneID) async throws {
        locked { _ = $0.zones.insert(zoneID.zoneName) }
    }

    func modifyRecords(zoneID: ZoneID, operations: [RecordOperation], atomic: Bool) async throws -> [RecordOperationResult] {
        try locked { (state: inout State) throws -> [RecordOperationResult] in
            state.modifyCalls += 1
            state.operationsReceived += operations
            if !state.modifyFailures.isEmpty {
                let failure = state.modifyFailures.removeFirst()
                throw RecordClientError.server(failure, httpStatus: failure.code.httpStatus)
            }
            guard state.zones.contains(zoneID.zoneName) else {
                throw RecordClientError.server(ServerError(.zoneNotFound, "no zone"), httpStatus: 404)
            }
            guard operations.count <= 400 else {
                throw RecordClientError.server(ServerError(.limitExceeded, "too many operations"), httpStatus: 413)
            }
            return operations.map { state.apply($0) }
        }
    }

    func lookupRecords(zoneID: ZoneID, recordNames: [String]) async throws -> [RecordOperationResult] {
        locked { state in
            recordNames.map { name in
                state.records[name].map(RecordOperationResult.saved) ?? .failed(ServerError(.notFound, "no such record").with(recordName: name))
            }
        }
    }

    func fetchZoneChanges(zoneID: ZoneID, syncToken: String?, resultsLimit: Int?) async throws -> ZoneChangesPage {
        try locked { (state: inout State) throws -> ZoneChangesPage in
            guard state.zones.contains(zoneID.zoneName) else {
                throw RecordClientError.server(ServerError(.zoneNotFound, "no zone"), httpStatus: 404)
            }
            let parts = syncToken?.split(separator: ":").compactMap { Int($0) } ?? [state.tokenEpoch, 0]
            guard parts.count == 2, parts[0] == state.tokenEpoch else {
                throw RecordClientError.server(ServerError(.changeTokenExpired, "expired"), httpStatus: 410)
            }
            let after = parts[1]
            let pending = state.changeLog.filter { $0.sequence > after }
            let page = Array(pending.prefix(state.pageSize))
            let changes: [RecordChange] = page.map { entry in
                state.records[entry.name].map(RecordChange.saved) ?? .deleted(recordName: entry.name, recordType: entry.type)
            }
            let token = "\(state.tokenEpoch):\(page.last?.sequence ?? after)"
            return ZoneChangesPage(changes: changes, syncToken: token, moreComing: pending.count > page.count)
        }
    }

    func saveSubscription(_ subscription: Subscription) async throws {}

    func createNotificationChannel() async throws -> NotificationChannel {
        NotificationChannel(apnsToken: "token", webcourierURL: "memory://courier")
    }

    func pollNotifications(_ channel: NotificationChannel, since cursor: String?, timeout: Int) async throws -> NotificationPage {
        let after = cursor.flatMap { Int($0) } ?? 0
        let found = locked { $0.notifications.filter { $0.cursor > after } }
        if found.isEmpty {
            try await Task.sleep(nanoseconds: 50_000_000)
            return NotificationPage(notifications: [], cursor: cursor)
        }
        return NotificationPage(notifications: found.map(\.notification), cursor: String(found.last!.cursor))
    }
}

extension MemoryCloudDatabase.State {
    mutating func apply(_ operation: RecordOperation) -> RecordOperationResult {
        let name = operation.recordName
        func failure(_ code: ServerErrorCode, _ reason: String, server: Record? = nil) -> RecordOperationResult {
            var error = ServerError(code, reason).with(recordName: name)
            error.serverRecord = server?.json()
            return .failed(error)
        }
        switch operation.kind {
        case .forceDelete, .delete:
            guard records[name] != nil else { return .deleted(recordName: name) }
            cascadeDelete(name)
            return .deleted(recordName: name)
        case .create, .update, .forceUpdate, .replace, .forceReplace:
            let existing = records[name]
            if operation.kind == .create, existing != nil { return failure(.exists, "record exists") }
            if operation.kind == .update {
                guard let existing else { return failure(.notFound, "no such record") }
                guard existing.recordChangeTag == operation.record.recordChangeTag else {
                    return failure(.conflict, "stale tag", server: existing)
                }
            }
            var saved = existing ?? Record(recordName: name, recordType: operation.record.recordType)
            for (field, value) in operation.record.fields { saved.fields[field] = value }
            for field in operation.record.removedFieldNames { saved.fields[field] = nil }
            for (_, reference) in saved.references where reference.action != .none && records[reference.recordName] == nil {
                return failure(.validatingReferenceError, "missing \(reference.recordName)")
            }
            saved.recordChangeTag = nextTag()
            records[name] = saved
            logChange(name, type: saved.recordType)
            return .saved(saved)
        }
    }

    mutating func cascadeDelete(_ root: String) {
        var queue = [root]
        var index = 0
        var seen: Set<String> = [root]
        while index < queue.count {
            let target = queue[index]
            for (name, record) in records where !seen.contains(name)
                && record.references.contains(where: { $0.reference.recordName == target && $0.reference.action == .deleteSelf })
            {
                seen.insert(name)
                queue.append(name)
            }
            index += 1
        }
        for name in queue {
            if let record = records.removeValue(forKey: name) { logChange(name, type: record.recordType) }
        }
    }

    mutating func nextTag() -> String {
        tagCounter += 1
        return "tag-\(tagCounter)"
    }

    mutating func logChange(_ name: String, type: String) {
        sequence += 1
        changeLog.removeAll { $0.name == name }
        changeLog.append((sequence, name, type))
        var notification = PushNotification(json: ["ck": ["nid": .string("n\(sequence)"), "fet": ["zid": "ScorebookData", "sid": "s"]]])!
        notification.recordName = name
        notifications.append((sequence, notification))
    }
}
