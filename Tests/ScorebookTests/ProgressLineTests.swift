import Foundation
import RecordModel
@testable import Scorebook
@testable import SyncEngine
import XCTest

/// The sync progress indicator without a terminal: what `ProgressLine` draws when, and the
/// counts the engine reports.
final class ProgressLineTests: XCTestCase {
    let line = ProgressLine(delay: 1)

    func testNothingIsShownDuringTheFirstSecond() {
        let progress = SyncProgress(phase: .sending, sent: 10, toSend: 4000)
        XCTAssertNil(line.text(elapsed: 0, progress: progress, width: 80))
        XCTAssertNil(line.text(elapsed: 0.999, progress: progress, width: 80))
        XCTAssertNotNil(line.text(elapsed: 1.0, progress: progress, width: 80))
    }

    func testSendingShowsABarAndTheCountsOfQueuedRecords() {
        let progress = SyncProgress(phase: .sending, sent: 1200, toSend: 4000)
        XCTAssertEqual(line.text(elapsed: 1.5, progress: progress, width: 80),
                       "syncing [#########.....................] 1,200/4,000 records")
        XCTAssertEqual(line.text(elapsed: 2, progress: SyncProgress(phase: .sending, sent: 4000, toSend: 4000), width: 80),
                       "syncing [##############################] 4,000/4,000 records")
        XCTAssertEqual(line.text(elapsed: 2, progress: SyncProgress(phase: .sending, sent: 0, toSend: 7), width: 80),
                       "syncing [..............................] 0/7 records")
    }

    func testANarrowTerminalGetsAShorterBarAndNeverAWrappedLine() throws {
        let progress = SyncProgress(phase: .sending, sent: 500, toSend: 1000)
        let narrow = try XCTUnwrap(line.text(elapsed: 2, progress: progress, width: 40))
        XCTAssertEqual(narrow, "syncing [#####......] 500/1,000 records")
        XCTAssertEqual(narrow.count, 39)
        XCTAssertEqual(line.text(elapsed: 2, progress: progress, width: 30), "syncing 500/1,000 records")
        for width in 2...100 {
            let text = try XCTUnwrap(line.text(elapsed: 2, progress: progress, width: width))
            XCTAssertLessThan(text.count, width, "width \(width)")
        }
        XCTAssertNil(line.text(elapsed: 2, progress: progress, width: 0))
    }

    func testReceivingShowsACountAndASpinnerSinceTheTotalIsUnknown() {
        let progress = SyncProgress(phase: .receiving, sent: 3, toSend: 3, received: 1234)
        // The spinner turns every tenth of a second.
        XCTAssertEqual(line.text(elapsed: 1.2, progress: progress, width: 80), "syncing | fetched 1,234 records")
        XCTAssertEqual(line.text(elapsed: 1.35, progress: progress, width: 80), "syncing / fetched 1,234 records")
        XCTAssertEqual(line.text(elapsed: 1.4, progress: progress, width: 80), "syncing - fetched 1,234 records")
        XCTAssertEqual(line.text(elapsed: 1.5, progress: progress, width: 80), "syncing \\ fetched 1,234 records")
        XCTAssertEqual(line.text(elapsed: 1.6, progress: progress, width: 80), "syncing | fetched 1,234 records")
        XCTAssertEqual(line.text(elapsed: 5.2, progress: SyncProgress(), width: 80), "syncing |", "nothing queued yet")
    }

    func testAFinishedSyncShowsNothing() {
        XCTAssertNil(line.text(elapsed: 9, progress: SyncProgress(phase: .sending, sent: 5, toSend: 5, finished: true), width: 80))
    }

    func testTheErasureBlanksTheLineAndReturnsToItsStart() {
        XCTAssertEqual(ProgressLine.erasure(ofLength: 3), "\r   \r")
    }

    func testGroupedNumbers() {
        XCTAssertEqual([0, 7, 999, 1000, 12_345, 1_234_567, -4200].map(ProgressLine.grouped),
                       ["0", "7", "999", "1,000", "12,345", "1,234,567", "-4,200"])
    }

    func testShownOnATerminalOrWhenForcedAfterTheConfiguredDelay() {
        XCTAssertEqual(ProgressLine.configured(environment: [:], standardErrorIsTerminal: true), ProgressLine(delay: 1))
        XCTAssertNil(ProgressLine.configured(environment: [:], standardErrorIsTerminal: false))
        XCTAssertEqual(ProgressLine.configured(environment: ["SCOREBOOK_PROGRESS": "always"], standardErrorIsTerminal: false),
                       ProgressLine(delay: 1))
        XCTAssertNil(ProgressLine.configured(environment: ["SCOREBOOK_PROGRESS": "never"], standardErrorIsTerminal: true))
        XCTAssertEqual(ProgressLine.configured(environment: ["SCOREBOOK_PROGRESS_AFTER_MS": "250"], standardErrorIsTerminal: true),
                       ProgressLine(delay: 0.25))
        XCTAssertEqual(ProgressLine.configured(environment: ["SCOREBOOK_PROGRESS_AFTER_MS": "soon"], standardErrorIsTerminal: true),
                       ProgressLine(delay: 1))
        XCTAssertNil(ProgressLine.configured(environment: ["SCOREBOOK_PROGRESS_AFTER_MS": "0"], standardErrorIsTerminal: false),
                     "a delay alone does not force it on")
    }

    /// The engine reports sends against the queued total, then received counts, then the end.
    func testTheEngineReportsSentOfQueuedThenReceivedThenTheEnd() async throws {
        let server = MemoryCloudDatabase()
        let clock = TestClock()
        let sender = try TestMachine(server: server, clock: clock)
        try sender.book.addGame(name: "Catan")
        var people: [String] = []
        for index in 0..<450 { people.append(try sender.book.addPerson(firstName: "P\(index)").recordName) }
        var reports: [SyncProgress] = []
        let summary = try await sender.synchronizer.sync(onProgress: { reports.append($0) })
        XCTAssertEqual(summary.sentSaved, 451)
        let sends = reports.filter { $0.phase == .sending && !$0.finished }
        XCTAssertEqual(sends.map(\.sent), [0, 400, 451], "one report per batch of at most 400")
        XCTAssertEqual(Set(sends.map(\.toSend)), [451])
        let last = try XCTUnwrap(reports.last)
        XCTAssertEqual([last.sent, last.toSend], [451, 451])
        XCTAssertEqual(last.phase, .receiving)
        XCTAssertTrue(last.finished)
        XCTAssertEqual(reports.filter(\.finished).count, 1)

        let receiver = try TestMachine(server: server, clock: clock)
        reports = []
        try await receiver.synchronizer.sync(onProgress: { reports.append($0) })
        let received = reports.filter { $0.phase == .receiving }.map(\.received)
        XCTAssertEqual(received.last, 451)
        XCTAssertEqual(received, received.sorted(), "the received count only grows")
        XCTAssertTrue(reports.allSatisfy { $0.toSend == 0 }, "nothing to send")
        XCTAssertEqual(reports.last?.finished, true)
    }

    func testAFailedSyncStillReportsItsEnd() async throws {
        let machine = try TestMachine(server: MemoryCloudDatabase(), clock: TestClock())
        try machine.book.addGame(name: "Catan")
        machine.database.isDown = true
        var reports: [SyncProgress] = []
        do {
            try await machine.synchronizer.sync(onProgress: { reports.append($0) })
            XCTFail("the server is down")
        } catch {}
        XCTAssertEqual(reports.last?.finished, true)
    }

    func testAPictureTransferShowsItsBytes() {
        var progress = SyncProgress(phase: .receiving, received: 3)
        progress.pictureIsUpload = false
        progress.pictureBytes = 8 * 1_048_576
        progress.pictureTotalBytes = 20 * 1_048_576
        XCTAssertEqual(line.text(elapsed: 2, progress: progress, width: 80), "syncing [############..................] 8.0/20.0 MB of a picture")
        progress.pictureIsUpload = true
        progress.pictureBytes = 5 * 1_048_576
        XCTAssertEqual(line.text(elapsed: 2, progress: progress, width: 80), "syncing [#######.......................] 5.0/20.0 MB of a picture sent")
        XCTAssertEqual(line.text(elapsed: 2, progress: progress, width: 40), "syncing 5.0/20.0 MB of a picture sent")
        progress.pictureTotalBytes = 0
        XCTAssertEqual(line.text(elapsed: 2, progress: progress, width: 80), "syncing | fetched 3 records", "the counts again once it is done")
    }
}
