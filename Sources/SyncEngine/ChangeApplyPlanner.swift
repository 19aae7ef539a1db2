import RecordClient
import RecordModel

/// Orders fetched changes so that each record is applied after the records it cannot exist
/// without; a record whose required record is neither local nor arriving is kept waiting
/// (a child whose parent has not arrived yet is kept, not dropped).
package enum ChangeApplyPlanner {
    package struct Plan: Equatable, Sendable {
        /// Tombstones, in feed order.
        package var deletions: [String]
        /// Records to apply, each after the records it requires.
        package var saves: [Record]
        /// Records still missing a required record, with the name of one missing record.
        package var waiting: [Waiting]
    }

    package struct Waiting: Equatable, Sendable {
        package var record: Record
        package var missingRecordName: String
    }

    /// - Parameters:
    ///   - changes: one page of the change feed.
    ///   - waiting: records kept waiting from earlier pages.
    ///   - isPresentLocally: whether the local store holds a record (before this page).
    package static func plan(changes: [RecordChange], waiting: [Record], isPresentLocally: (String) -> Bool) -> Plan {
        var deletions: [String] = []
        var candidates: [String: Record] = [:]
        var order: [String] = []
        candidates.reserveCapacity(waiting.count + changes.count)
        order.reserveCapacity(waiting.count + changes.count)
        for record in waiting where candidates[record.recordName] == nil {
            candidates[record.recordName] = record
            order.append(record.recordName)
        }
        for change in changes {
            switch change {
            case .saved(let record):
                if candidates[record.recordName] == nil { order.append(record.recordName) }
                candidates[record.recordName] = record
            case .deleted(let name, _, _):
                deletions.append(name)
                candidates[name] = nil
            }
        }
        let deleted = Set(deletions)
        var available: Set<String> = []
        available.reserveCapacity(candidates.count)
        func isAvailable(_ name: String) -> Bool {
            available.contains(name) || (!deleted.contains(name) && isPresentLocally(name))
        }

        var remaining = order.filter { candidates[$0] != nil }
        var saves: [Record] = []
        // Each pass applies every record whose requirements are met; at most one pass per record.
        for _ in 0...remaining.count {
            var next: [String] = []
            for name in remaining {
                let record = candidates[name]!
                if record.requiredRecordNames.allSatisfy({ $0 == name || isAvailable($0) }) {
                    saves.append(record)
                    available.insert(name)
                } else {
                    next.append(name)
                }
            }
            if next.count == remaining.count { break }
            remaining = next
        }
        let stillWaiting = remaining.map { name -> Waiting in
            let record = candidates[name]!
            let missing = record.requiredRecordNames.first { $0 != name && !isAvailable($0) } ?? name
            return Waiting(record: record, missingRecordName: missing)
        }
        return Plan(deletions: deletions, saves: saves, waiting: stillWaiting)
    }
}
