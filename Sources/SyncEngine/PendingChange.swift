import RecordModel

/// One entry of the durable outbox: a record that must be pushed to the server. The outbox
/// holds at most one entry per record; the record's content is read from the local store when
/// it is sent, so many edits of one record are sent once.
package struct PendingChange: Equatable, Sendable {
    package enum Operation: String, Sendable {
        case save, delete
    }

    package var recordName: String
    package var recordType: String
    package var operation: Operation
    /// Grows with every local edit; an acknowledgement only removes the entry it was sent for.
    package var sequence: Int64
    /// Records that must exist on the server before this one is saved: the targets of its
    /// references and its parent.
    package var dependencies: [String]

    package init(recordName: String, recordType: String, operation: Operation, sequence: Int64, dependencies: [String] = []) {
        self.recordName = recordName
        self.recordType = recordType
        self.operation = operation
        self.sequence = sequence
        self.dependencies = dependencies
    }
}

extension Record {
    /// The records that must exist before this one can be saved: reference targets and parent.
    var saveDependencies: [String] {
        var names = references.map(\.reference.recordName)
        if let parent { names.append(parent) }
        return names
    }

    /// The records whose absence means this one cannot exist either: targets of its
    /// `DELETE_SELF` and `VALIDATE` references (a `NONE` reference may dangle).
    var requiredRecordNames: [String] {
        references.filter { $0.reference.action != .none }.map(\.reference.recordName)
    }
}
