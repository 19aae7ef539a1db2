import Foundation
import RecordClient
import RecordModel
import SyncEngine

/// An in-memory server for one user's private database with the semantics the sync engine
/// relies on: change tags, CONFLICT with the server copy, DELETE_SELF
/// cascades, VALIDATING_REFERENCE_ERROR, a change feed with moreComing, zones.
final class MemoryCloudDatabase: CloudDatabase, @unchecked Sendable {
    private let lock = NSLock()
    let userRecordName: String
    private var zones: Set<String> = []
    private var records: [String: Record] = [:]
    /// The change log: sequence → record name; the latest entry per name is its state.
    private var changeLog: [(sequence: Int, name: String, type: String)] = []
    private var sequence = 0
    private var tagCounter = 0
    private var notifications: [(cursor: Int, notification: PushNotification)] = []
    /// Records per changes/zone page, small so tests cross pages.
    var pageSize = 3
    /// Whole-request errors to answer the next modify calls with, in order.
    var modifyFailures: [ServerError] = []
    /// Tokens carry this epoch; tokens of an earlier one are answered with CHANGE_TOKEN_EXPIRED.
    private var tokenEpoch = 0
    /// Counts of calls, for assertions.
    private(set) var modifyCalls = 0
    private(set) var operationsReceived: [RecordOperation] = []

    init(userRecordName: String = "_user") {
        self.userRecordName = userRecordName
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// The records the server holds now.
    var allRecords: [String: Record] { locked { records } }

    func deleteZone(_ name: String) {
        locked {
            zones.remove(name)
            records.removeAll()
            changeLog.removeAll()
        }
    }

    /// Forgets tombstones, as the server does after the retention period; the tokens handed
    /// out so far expire.
    func purgeTombstonesAndExpireTokens() {
        locked {
            changeLog.removeAll { records[$0.name] == nil }
            tokenEpoch += 1
        }
    }

    /// Saves a record as another machine would (for tests that need a concurrent edit).
    func saveAsOtherMachine(_ record: Record) {
        locked {
            var stored = record
            stored.recordChangeTag = nextTag()
            records[record.recordName] = stored
            logChange(record.recordName, type: record.recordType)
        }
    }

    func currentUserRecordName() async throws -> String { userRecordName }

    func createZone(_ zoneID: ZoneID) async throws {
        locked { _ = zones.insert(zoneID.zoneName) }
    }

    func modifyRecords(zoneID: ZoneID, operations: [RecordOperation], atomic: Bool) async throws -> [RecordOperationResult] {
        try locked {
            modifyCalls += 1
            operationsReceived += operations
            if !modifyFailures.isEmpty {
                let failure = modifyFailures.removeFirst()
                throw RecordClientError.server(failure, httpStatus: failure.code.httpStatus)
            }
            guard zones.contains(zoneID.zoneName) else {
                throw RecordClientError.server(ServerError(.zoneNotFound, "no zone"), httpStatus: 404)
            }
            guard operations.count <= 400 else {
                throw RecordClientError.server(ServerError(.limitExceeded, "too many operations"), httpStatus: 413)
            }
            return operations.map(apply)
        }
    }

    private func apply(_ operation: RecordOperation) -> RecordOperationResult {
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

    private func cascadeDelete(_ root: String) {
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

    private func nextTag() -> String {
        tagCounter += 1
        return "tag-\(tagCounter)"
    }

    private func logChange(_ name: String, type: String) {
        sequence += 1
        changeLog.removeAll { $0.name == name }
        changeLog.append((sequence, name, type))
        var notification = PushNotification(json: ["ck": ["nid": .string("n\(sequence)"), "fet": ["zid": "ScorebookData", "sid": "s"]]])!
        notification.recordName = name
        notifications.append((sequence, notification))
    }

    func lookupRecords(zoneID: ZoneID, recordNames: [String]) async throws -> [RecordOperationResult] {
        locked {
            recordNames.map { name in
                records[name].map(RecordOperationResult.saved) ?? .failed(ServerError(.notFound, "no such record").with(recordName: name))
            }
        }
    }

    func fetchZoneChanges(zoneID: ZoneID, syncToken: String?, resultsLimit: Int?) async throws -> ZoneChangesPage {
        try locked {
            guard zones.contains(zoneID.zoneName) else {
                throw RecordClientError.server(ServerError(.zoneNotFound, "no zone"), httpStatus: 404)
            }
            let parts = syncToken?.split(separator: ":").compactMap { Int($0) } ?? [tokenEpoch, 0]
            guard parts.count == 2, parts[0] == tokenEpoch else {
                throw RecordClientError.server(ServerError(.changeTokenExpired, "expired"), httpStatus: 410)
            }
            let after = parts[1]
            let pending = changeLog.filter { $0.sequence > after }
            let page = Array(pending.prefix(pageSize))
            let changes: [RecordChange] = page.map { entry in
                records[entry.name].map(RecordChange.saved) ?? .deleted(recordName: entry.name, recordType: entry.type)
            }
            let token = "\(tokenEpoch):\(page.last?.sequence ?? after)"
            return ZoneChangesPage(changes: changes, syncToken: token, moreComing: pending.count > page.count)
        }
    }

    func saveSubscription(_ subscription: Subscription) async throws {}

    func createNotificationChannel() async throws -> NotificationChannel {
        NotificationChannel(apnsToken: "token", webcourierURL: "memory://courier")
    }

    func pollNotifications(_ channel: NotificationChannel, since cursor: String?, timeout: Int) async throws -> NotificationPage {
        let after = cursor.flatMap { Int($0) } ?? 0
        let found = locked { notifications.filter { $0.cursor > after } }
        if found.isEmpty {
            try await Task.sleep(nanoseconds: 50_000_000)
            return NotificationPage(notifications: [], cursor: cursor)
        }
        return NotificationPage(notifications: found.map(\.notification), cursor: String(found.last!.cursor))
    }
}
