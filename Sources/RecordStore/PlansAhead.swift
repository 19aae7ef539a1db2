import Foundation
import RecordModel
import Synchronization

/// The plans of a batch's creates (`RecordRules.plan`), made on another core while the SQLite
/// write thread inserts the records before them. Planning a record (reading its fields against
/// the schema, writing its stored JSON) took 29 % of the write thread's loop, 2.7 µs a record in a
/// probe build, while the second core waited for the answer.
///
/// A plan made ahead assumes the name is free (as a create is first tried) and uses the schema
/// as the transaction began. The write thread takes it only when it is finished by the time the
/// record's turn comes, and only when it saves without teaching the schema a field: a field a
/// batch learns changes how the records after it are read, and a refused record teaches nothing.
/// Anything else (an error, a field added, a plan not ready, a name taken after all) the write
/// thread plans itself, as it always did, so a batch's answer is the same either way.
///
/// Each index is planned by whichever side claims it first (`next`); the planner finishes its
/// claims in order, so `finished` tells the write thread which slots hold a plan.
package final class PlansAhead: @unchecked Sendable {
    /// Fewer creates than this are planned on the write thread: handing work to another thread
    /// costs more than it saves for a handful of records.
    static let minimumCreates = 16
    /// Off in tests that compare a batch's outcome with and without plans made ahead.
    package static let isEnabled = Atomic<Bool>(true)
    /// Tests: the write thread waits until every plan is made before it begins, so each create
    /// the planner could plan takes that path.
    package static let waitsForEveryPlan = Atomic<Bool>(false)
    /// Plans the write thread took from the planner, for tests to see the path was used.
    package static let plansTaken = Atomic<Int>(0)

    private let operations: [RecordOperation]
    private let zoneName: String
    private let zoneID: ZoneID
    private let scope: DatabaseScope
    private let enforcer: SchemaEnforcer
    /// Slot i is written by the planner before it publishes `finished` > i, and read by the write
    /// thread only after it saw that.
    private let slots: UnsafeMutablePointer<RecordRules.PreparedSave?>
    private let next = Atomic<Int>(0)
    private let finished = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    /// Starts planning `operations`' creates on the planner thread, or returns nil when the batch
    /// has too few of them to be worth it (or the process has one CPU).
    static func start(_ operations: [RecordOperation], zoneName: String, zoneID: ZoneID, scope: DatabaseScope,
                      enforcer: SchemaEnforcer) -> PlansAhead?
    {
        var creates = 0
        for operation in operations where operation.type == .create { creates += 1 }
        // With one CPU the planner would only take turns with the write thread.
        guard creates >= minimumCreates, WriteHelperThread.hasAnotherCPU, isEnabled.load(ordering: .relaxed) else { return nil }
        let plans = PlansAhead(operations, zoneName: zoneName, zoneID: zoneID, scope: scope, enforcer: enforcer)
        WriteHelperThread.shared.run { plans.run() }
        if waitsForEveryPlan.load(ordering: .relaxed) { plans.waitForEveryPlan() }
        return plans
    }

    private init(_ operations: [RecordOperation], zoneName: String, zoneID: ZoneID, scope: DatabaseScope, enforcer: SchemaEnforcer) {
        self.operations = operations
        self.zoneName = zoneName
        self.zoneID = zoneID
        self.scope = scope
        self.enforcer = enforcer
        slots = .allocate(capacity: operations.count)
        slots.initialize(repeating: nil, count: operations.count)
    }

    deinit {
        slots.deinitialize(count: operations.count)
        slots.deallocate()
    }

    /// The plan of the create at `index` as a new record, when the planner has it; nil when the
    /// write thread must plan it (the planner then skips it if it has not begun it).
    func take(_ index: Int) -> RecordRules.PreparedSave? {
        if finished.load(ordering: .acquiring) > index, let plan = slots[index].take() {
            Self.plansTaken.add(1, ordering: .relaxed)
            return plan
        }
        _ = next.compareExchange(expected: index, desired: index + 1, ordering: .relaxed)
        return nil
    }

    private func waitForEveryPlan() {
        let deadline = Date().addingTimeInterval(30)
        while finished.load(ordering: .acquiring) < operations.count, Date() < deadline { usleep(200) }
    }

    /// Stops the planner after the plan it is making (the batch is over).
    func stop() { stopped.store(true, ordering: .relaxed) }

    /// Plans until every index is claimed or the batch is over (a batch that ended before the
    /// planner came to it costs nothing more).
    private func run() {
        while !stopped.load(ordering: .relaxed) {
            let index = next.load(ordering: .relaxed)
            guard index < operations.count else { return }
            guard next.compareExchange(expected: index, desired: index + 1, ordering: .relaxed).exchanged else { continue }
            slots[index] = plan(operations[index])
            finished.store(index + 1, ordering: .releasing)
        }
    }

    private func plan(_ operation: RecordOperation) -> RecordRules.PreparedSave? {
        // A bad name is refused by the plan itself (`Record(draft:)`), as any other error: nil.
        guard operation.type == .create, let name = operation.recordName, name != ShareRules.recordName,
              case .save(let prepared)? = try? RecordRules.plan(operation, name: name, live: nil, zoneName: zoneName, zoneID: zoneID,
                                                                scope: scope, enforcer: enforcer),
              prepared.enforcer.additions.isEmpty
        else { return nil }
        return prepared
    }
}
