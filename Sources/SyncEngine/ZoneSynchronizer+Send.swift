import RecordClient
import RecordModel

extension ZoneSynchronizer {
    /// Sends the outbox in batches (parents first, at most 400 operations) and carries out the
    /// `SendDecision` for each answer, for a bounded number of rounds.
    func sendOutbox(_ summary: inout SyncSummary, progress: SyncProgressReporter = SyncProgressReporter(nil),
                    onChange: (AppliedChange) -> Void) async throws
    {
        var recreatedZone = false
        var throttledRounds = 0
        var lastProblem: String?
        for _ in 0..<Self.maximumSendRounds {
            let changes = try store.sendableChanges()
            guard !changes.isEmpty else { return }
            progress.sending(queued: changes.count)
            var round = SendRound()
            for batch in OutboxPlanner.batches(changes, limit: RecordClient.maximumOperationsPerRequest) {
                do {
                    try await sendBatch(batch, &summary, &round, progress: progress, onChange: onChange)
                } catch RecordClientError.server(let error, _) where error.code == .zoneNotFound {
                    round.zoneMissing = true
                }
                if round.zoneMissing { break }
                progress.sent(batch.count)
            }
            if round.zoneMissing {
                guard !recreatedZone else { throw SyncError("the zone \(zoneID.zoneName) keeps disappearing on the server") }
                recreatedZone = true
                try await recreateZone()
                continue
            }
            if let stop = round.stop { throw RecordClientError.server(stop, httpStatus: stop.code.httpStatus) }
            lastProblem = round.problem ?? lastProblem
            if round.needsRetry {
                throttledRounds += 1
                guard let delay = retryPolicy.delay(afterAttempt: throttledRounds, retryAfter: round.retryAfter) else {
                    throw SyncError("the server kept refusing changes: \(lastProblem ?? "try again later")")
                }
                try await sleep(delay)
            }
        }
        let left = try store.sendableChanges().count
        if left > 0 { throw SyncError("\(left) changes could not be sent yet: \(lastProblem ?? "the server did not accept them")") }
    }

    /// What happened in one round of sending.
    struct SendRound {
        var needsRetry = false
        var retryAfter: Int?
        var zoneMissing = false
        var stop: ServerError?
        var problem: String?
    }

    private func sendBatch(_ batch: [PendingChange], _ summary: inout SyncSummary, _ round: inout SendRound,
                           progress: SyncProgressReporter, onChange: (AppliedChange) -> Void) async throws
    {
        var sending: [(change: PendingChange, operation: RecordOperation)] = []
        for change in batch {
            if let operation = try operation(for: change) {
                sending.append((change, operation))
            } else {
                try guarded { try store.dropIfUnchanged(change) }
            }
        }
        // The last moment before the request leaves: checked in the same transaction that the
        // store still belongs to the account whose token sends it.
        sending = try guarded { try store.markAttempted(sending) }
        guard !sending.isEmpty else { return }
        // Pictures go up before the records that refer to them.
        sending = try await uploadPictures(sending, &summary, progress: progress)
        let results = try await modify(sending.map(\.operation), attempt: 1)
        // Sent states stay until an answer settles them: a save or delete acknowledged, or a
        // merge with the server's copy. A refusal does not: the request may have been delivered
        // twice, the first applied and the second refused (`EXISTS` for a create), and the state
        // it left is then the ancestor the lookup's merge needs.
        let unsent = try store.unsentRecordNames()
        var toLookUp: [PendingChange] = []
        for ((change, operation), result) in zip(sending, results) {
            if case .failed(let error) = result, error.code == .badRequest, try forgetUploadsRefused(in: operation.record) {
                // Sent without a receipt for a picture the server no longer holds: uploaded again next round.
                round.problem = "\(change.recordName): \(error.description)"
                continue
            }
            let decision = SendDecision.decide(change: change, sent: operation.kind, result: result, unsentRecordNames: unsent)
            switch decision {
            case .acknowledgeSave(let saved):
                try guarded { try store.acknowledgeSave(change, sent: operation.record, saved: saved) }
                summary.sentSaved += 1
            case .acknowledgeDelete:
                try guarded { try store.acknowledgeDelete(change) }
                summary.sentDeleted += 1
            case .merge(let serverRecord):
                try merge(serverRecord, &summary, onChange: onChange)
            case .lookUpAndMerge:
                toLookUp.append(change)
            case .deleteLocally:
                // Refused for a missing reference: a record it belongs to went; else it went itself.
                let parentWent = if case .failed(let error) = result { error.code == .validatingReferenceError } else { false }
                let deletion = try guarded {
                    try store.applyRemoteDeletion(of: change.recordName, reason: parentWent ? .parentDeleted : .deleted)
                }
                report(deletion, &summary, onChange: onChange)
            case .sendAfterDependencies:
                break
            case .retry(let after):
                round.needsRetry = true
                round.retryAfter = max(round.retryAfter ?? 0, after ?? 0)
                if case .failed(let error) = result { round.problem = error.description }
            case .recreateZone:
                round.zoneMissing = true
            case .park(let reason):
                try guarded { try store.park(change, reason: reason) }
                round.problem = "\(change.recordName): \(reason)"
            case .stop(let error):
                round.stop = error
            }
        }
        if !toLookUp.isEmpty { try await lookUpAndMerge(toLookUp, &summary, &round, onChange: onChange) }
    }

    /// The operation that brings the server up to the local record, or nil when nothing
    /// needs sending.
    func operation(for change: PendingChange) throws -> RecordOperation? {
        switch change.operation {
        case .delete:
            return .forceDelete(change.recordName, recordType: change.recordType)
        case .save:
            guard let local = try store.record(named: change.recordName) else { return nil }
            guard let copy = try store.serverCopy(named: change.recordName) else { return .create(local) }
            let difference = RecordMerge.difference(from: copy.fields, to: local.fields)
            guard !difference.changed.isEmpty || !difference.removed.isEmpty else { return nil }
            var update = Record(recordName: local.recordName, recordType: local.recordType, fields: difference.changed,
                                recordChangeTag: copy.recordChangeTag)
            update.removedFieldNames = difference.removed
            return .update(update)
        }
    }

    /// `records/modify`, splitting the batch when it is too large and waiting out throttling
    /// of the whole request.
    private func modify(_ operations: [RecordOperation], attempt: Int) async throws -> [RecordOperationResult] {
        do {
            return try await database.modifyRecords(zoneID: zoneID, operations: operations, atomic: false)
        } catch RecordClientError.server(let error, _) where error.code == .limitExceeded {
            guard operations.count > 1 else { return [.failed(error)] }
            let half = operations.count / 2
            let first = try await modify(Array(operations[..<half]), attempt: 1)
            let second = try await modify(Array(operations[half...]), attempt: 1)
            return first + second
        } catch RecordClientError.server(let error, _) where error.code == .throttled || error.code == .tryAgainLater {
            guard let delay = retryPolicy.delay(afterAttempt: attempt, retryAfter: error.retryAfter) else { throw SyncError(error.description) }
            try await sleep(delay)
            return try await modify(operations, attempt: attempt + 1)
        }
    }

    private func merge(_ serverRecord: Record, _ summary: inout SyncSummary, onChange: (AppliedChange) -> Void) throws {
        let outcome = try guarded { try store.mergeServerRecord(serverRecord) }
        if outcome.hadConflict { summary.conflicts += 1 }
        summary.conflictDetails += outcome.conflicts
        // Counted as sent, so that a sync after an interrupted one sends what `status` said was pending.
        if outcome.settledEarlierSend { summary.sentSaved += 1 }
        if let applied = outcome.applied {
            summary.receivedSaved += 1
            onChange(applied)
        }
    }

    private func lookUpAndMerge(_ changes: [PendingChange], _ summary: inout SyncSummary, _ round: inout SendRound,
                                onChange: (AppliedChange) -> Void) async throws
    {
        let results = try await database.lookupRecords(zoneID: zoneID, recordNames: changes.map(\.recordName))
        for (change, result) in zip(changes, results) {
            switch result {
            case .saved(let serverRecord):
                try merge(serverRecord, &summary, onChange: onChange)
            case .failed(let error) where error.code == .notFound:
                report(try guarded { try store.applyRemoteDeletion(of: change.recordName, reason: .deleted) }, &summary, onChange: onChange)
            case .failed(let error):
                round.needsRetry = true
                round.problem = error.description
            case .deleted:
                report(try guarded { try store.applyRemoteDeletion(of: change.recordName, reason: .deleted) }, &summary, onChange: onChange)
            }
        }
    }

    /// Counts a remote deletion as every local record it removed (the README's rule, the same
    /// on the fetch path), and the local edits it dropped.
    func report(_ deletion: LocalRecordStore.RemoteDeletion, _ summary: inout SyncSummary, onChange: (AppliedChange) -> Void) {
        summary.receivedDeleted += deletion.applied.count
        summary.dropped += deletion.dropped
        deletion.applied.forEach(onChange)
    }
}
