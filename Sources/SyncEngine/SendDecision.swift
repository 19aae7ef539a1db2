import RecordClient
import RecordModel

/// What to do with an outbox entry once the server answered for it. A pure function of the
/// entry, the operation sent and the answer, so every branch is tested without a server.
package enum SendDecision: Equatable, Sendable {
    /// Saved: the answer is the new server copy; the entry goes unless edited meanwhile.
    case acknowledgeSave(Record)
    /// Deleted (or already gone): the entry goes.
    case acknowledgeDelete
    /// `CONFLICT` with the server copy: merge it with the local copy and send the result.
    case merge(serverRecord: Record)
    /// `CONFLICT` without a server copy, or `EXISTS`: look the record up, then merge.
    case lookUpAndMerge
    /// The record, or a record it cannot live without, was deleted on another machine.
    case deleteLocally
    /// A record this one depends on has not reached the server yet: send again after it.
    case sendAfterDependencies
    /// A transient failure: send again, after `retryAfter` seconds when the server said so.
    case retry(after: Int?)
    /// The zone is gone: recreate it and send everything again.
    case recreateZone
    /// The server will never accept this version; keep it aside until the record is edited.
    case park(reason: String)
    /// The credentials are refused: stop the whole sync.
    case stop(ServerError)

    /// - Parameters:
    ///   - change: the outbox entry.
    ///   - sent: the kind of operation sent for it.
    ///   - result: the server's answer for it.
    ///   - unsentRecordNames: records still waiting in the outbox to be created on the server.
    package static func decide(change: PendingChange, sent: RecordOperation.Kind, result: RecordOperationResult,
                              unsentRecordNames: Set<String>) -> SendDecision
    {
        switch result {
        case .saved(let record):
            return .acknowledgeSave(record)
        case .deleted:
            return .acknowledgeDelete
        case .failed(let error):
            return decide(change: change, sent: sent, error: error, unsentRecordNames: unsentRecordNames)
        }
    }

    static func decide(change: PendingChange, sent: RecordOperation.Kind, error: ServerError, unsentRecordNames: Set<String>) -> SendDecision {
        switch error.code {
        case .conflict:
            if let json = error.serverRecord, let record = try? Record(responseJSON: json) { return .merge(serverRecord: record) }
            return .lookUpAndMerge
        case .exists:
            return .lookUpAndMerge
        case .notFound:
            // An update of a record that is gone: deleted elsewhere. A delete of one: done.
            return sent.isDelete ? .acknowledgeDelete : .deleteLocally
        case .validatingReferenceError:
            if change.dependencies.contains(where: unsentRecordNames.contains) { return .sendAfterDependencies }
            return sent.isDelete ? .retry(after: nil) : .deleteLocally
        case .throttled, .tryAgainLater, .internalError, .atomicError:
            return .retry(after: error.retryAfter)
        case .zoneNotFound:
            return .recreateZone
        case .authenticationFailed, .authenticationRequired, .accessDenied:
            return .stop(error)
        case .limitExceeded, .badRequest, .changeTokenExpired:
            return .park(reason: error.description)
        }
    }
}
