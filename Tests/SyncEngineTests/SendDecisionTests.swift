import RecordClient
import RecordModel
import SyncEngine
import XCTest

final class SendDecisionTests: XCTestCase {
    let change = PendingChange(recordName: "Player|~|P", recordType: "Player", operation: .save, sequence: 7,
                               dependencies: ["Match|~|M", "Person|~|A"])
    let serverCopy = Record(recordName: "Player|~|P", recordType: "Player", fields: ["seat": .int64(2)], recordChangeTag: "t9")

    func decide(_ result: RecordOperationResult, sent: RecordOperation.Kind = .update, unsent: Set<String> = []) -> SendDecision {
        SendDecision.decide(change: change, sent: sent, result: result, unsentRecordNames: unsent)
    }

    func failure(_ code: ServerErrorCode, retryAfter: Int? = nil, server: Record? = nil) -> RecordOperationResult {
        var error = ServerError(code, "reason", retryAfter: retryAfter)
        error.serverRecord = server?.json()
        return .failed(error)
    }

    func testSuccessIsAcknowledged() {
        XCTAssertEqual(decide(.saved(serverCopy)), .acknowledgeSave(serverCopy))
        XCTAssertEqual(decide(.deleted(recordName: "Player|~|P"), sent: .forceDelete), .acknowledgeDelete)
    }

    func testConflictMergesWithTheServerCopyItCarries() {
        guard case .merge(let record) = decide(failure(.conflict, server: serverCopy)) else { return XCTFail("expected a merge") }
        XCTAssertEqual(record.recordChangeTag, "t9")
        XCTAssertEqual(record.fields["seat"], .int64(2))
        XCTAssertEqual(decide(failure(.conflict)), .lookUpAndMerge, "without serverRecord, look it up")
        XCTAssertEqual(decide(failure(.exists), sent: .create), .lookUpAndMerge)
    }

    func testNotFoundOnUpdateMeansDeletedElsewhere() {
        XCTAssertEqual(decide(failure(.notFound)), .deleteLocally)
        XCTAssertEqual(decide(failure(.notFound), sent: .delete), .acknowledgeDelete)
    }

    func testMissingParentIsDeletedElsewhereUnlessItIsStillToBeSent() {
        XCTAssertEqual(decide(failure(.validatingReferenceError)), .deleteLocally)
        XCTAssertEqual(decide(failure(.validatingReferenceError), unsent: ["Match|~|M"]), .sendAfterDependencies)
    }

    func testTransientFailuresRetryAfterTheServersDelay() {
        XCTAssertEqual(decide(failure(.throttled, retryAfter: 3)), .retry(after: 3))
        XCTAssertEqual(decide(failure(.tryAgainLater)), .retry(after: nil))
    }

    func testPermanentFailuresAreParkedAndCredentialsStopTheSync() {
        guard case .park = decide(failure(.limitExceeded)) else { return XCTFail("expected park") }
        guard case .park = decide(failure(.badRequest)) else { return XCTFail("expected park") }
        guard case .stop = decide(failure(.authenticationFailed)) else { return XCTFail("expected stop") }
        XCTAssertEqual(decide(failure(.zoneNotFound)), .recreateZone)
    }
}
