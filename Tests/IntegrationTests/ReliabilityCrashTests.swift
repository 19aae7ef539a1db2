import Foundation
import RecordModel
import Synchronization
import XCTest

#if canImport(Glibc)
import Glibc
import TestSupport
#endif

/// Issue 6, crash safety of the daemon: writers post atomic batches of 400 records while the
/// daemon is SIGKILLed at a random moment; after each restart on the same data directory every
/// batch is wholly present or wholly absent, every acknowledged batch is present, and
/// `scorebookd check` finds nothing wrong.
///
/// 5 rounds by default; `SCOREBOOK_CRASH_ROUNDS=50` runs more, `SCOREBOOK_CRASH_SEED=N`
/// replays the kill delays of a run.
final class ReliabilityCrashTests: XCTestCase {
    static let container = "iCloud.scorebook.crash"
    static let zone = "Crash"
    static let batchSize = 400
    static let writerCount = 2

    static var rounds: Int { Int(ProcessInfo.processInfo.environment["SCOREBOOK_CRASH_ROUNDS"] ?? "") ?? 5 }
    static var seed: UInt64 {
        UInt64(ProcessInfo.processInfo.environment["SCOREBOOK_CRASH_SEED"] ?? "") ?? UInt64(Date().timeIntervalSince1970 * 1000)
    }

    static func path(_ operation: String) -> String { "/database/1/\(container)/development/private/\(operation)" }

    static func recordName(batch: Int, index: Int) -> String { "b\(batch)-\(index)" }

    /// The body of batch `batch`: 400 creates in one atomic request.
    static func batchBody(_ batch: Int) -> [UInt8] {
        var text = #"{"zoneID":{"zoneName":"\#(zone)"},"atomic":true,"operations":["#
        for index in 0..<batchSize {
            if index > 0 { text += "," }
            text += #"{"operationType":"create","record":{"recordName":"\#(recordName(batch: batch, index: index))","#
            text += #""recordType":"CrashItem","fields":{"batch":{"value":\#(batch)},"index":{"value":\#(index)},"#
            text += #""payload":{"value":"\#(String(repeating: "x", count: 64))"}}}}"#
        }
        text += "]}"
        return Array(text.utf8)
    }

    /// What the writers saw: batches sent, and those acknowledged (200, all 400 saved).
    final class Ledger: Sendable {
        private struct Entries {
            var next: Int
            var attempted: Set<Int> = []
            var acknowledged: Set<Int> = []
            var refused: [String] = []
        }

        private let entries: Mutex<Entries>

        init(firstBatch: Int) { entries = Mutex(Entries(next: firstBatch)) }

        func take() -> Int {
            entries.withLock {
                $0.next += 1
                $0.attempted.insert($0.next)
                return $0.next
            }
        }

        func acknowledge(_ batch: Int) { entries.withLock { _ = $0.acknowledged.insert(batch) } }
        func refuse(_ text: String) { entries.withLock { $0.refused.append(text) } }
        var attempted: Set<Int> { entries.withLock { $0.attempted } }
        var acknowledged: Set<Int> { entries.withLock { $0.acknowledged } }
        var refused: [String] { entries.withLock { $0.refused } }
        var lastBatch: Int { entries.withLock { $0.next } }
        var acknowledgedCount: Int { entries.withLock { $0.acknowledged.count } }
    }

    /// Posts batches until a request fails (the daemon was killed) or `deadline` passes.
    static func write(port: Int, token: String, ledger: Ledger, deadline: Date) {
        while Date() < deadline {
            let batch = ledger.take()
            let answer: HTTPAnswer
            do {
                answer = try RawHTTP.send(port: port, method: "POST", path: path("records/modify"),
                                          headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                          body: batchBody(batch), timeout: 15)
            } catch {
                return  // killed mid-request (or before it): this batch may or may not have landed
            }
            guard answer.status == 200, let json = try? JSONValue.parse(answer.body),
                  let records = json["records"]?.arrayValue, records.count == batchSize,
                  records.allSatisfy({ $0["serverErrorCode"] == nil })
            else {
                if answer.status != 0 { ledger.refuse("batch \(batch): HTTP \(answer.status) \(answer.text.prefix(200))") }
                return
            }
            ledger.acknowledge(batch)
        }
    }

    /// Every record of the zone, by batch, read from `changes/zone` from the beginning.
    static func batchesOnServer(_ daemon: DaemonProcess, token: String) throws -> [Int: Set<Int>] {
        var batches: [Int: Set<Int>] = [:]
        var syncToken: String?
        for _ in 0..<100_000 {
            var zone: [String: JSONValue] = ["zoneID": ["zoneName": .string(Self.zone)]]
            if let syncToken { zone["syncToken"] = .string(syncToken) }
            let answer = try daemon.post(path("changes/zone"), token: token, json: JSONValue.object(["zones": [.object(zone)]]).serializedString())
            guard answer.status == 200, let entry = answer.body["zones"]?.arrayValue?.first, entry["serverErrorCode"] == nil else {
                throw DaemonError("changes/zone answered \(answer.status): \(answer.body.serializedString().prefix(300))")
            }
            for record in entry["records"]?.arrayValue ?? [] {
                guard record["deleted"]?.boolValue != true else { continue }
                guard let batch = record["fields"]?["batch"]?["value"]?.int64Value, let index = record["fields"]?["index"]?["value"]?.int64Value,
                      record["recordName"]?.stringValue == recordName(batch: Int(batch), index: Int(index))
                else { throw DaemonError("a record that no writer wrote: \(record.serializedString().prefix(300))") }
                batches[Int(batch), default: []].insert(Int(index))
            }
            syncToken = entry["syncToken"]?.stringValue
            if entry["moreComing"]?.boolValue != true { return batches }
        }
        throw DaemonError("changes/zone never ended")
    }

    /// `records/lookup` of the first and last record of each batch: present exactly when the feed says so.
    static func lookUpEnds(_ daemon: DaemonProcess, token: String, batches: [Int]) throws -> [Int: (first: Bool, last: Bool)] {
        var result: [Int: (first: Bool, last: Bool)] = [:]
        for start in stride(from: 0, to: batches.count, by: 100) {
            let slice = Array(batches[start..<min(start + 100, batches.count)])
            let names = slice.flatMap { [recordName(batch: $0, index: 0), recordName(batch: $0, index: batchSize - 1)] }
            let body: JSONValue = ["zoneID": ["zoneName": .string(zone)], "records": .array(names.map { ["recordName": .string($0)] })]
            let answer = try daemon.post(path("records/lookup"), token: token, json: body.serializedString())
            guard answer.status == 200, let entries = answer.body["records"]?.arrayValue, entries.count == names.count else {
                throw DaemonError("records/lookup answered \(answer.status): \(answer.body.serializedString().prefix(300))")
            }
            for (offset, batch) in slice.enumerated() {
                result[batch] = (entries[2 * offset]["serverErrorCode"] == nil, entries[2 * offset + 1]["serverErrorCode"] == nil)
            }
        }
        return result
    }

    static func check(_ directory: URL) throws -> (ok: Bool, output: String) {
        let result = try DaemonProcess.run("scorebookd", ["check", "--data-dir", directory.path], timeout: 60)
        let json = try? JSONValue.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        return (result.status == 0 && json?["ok"]?.boolValue == true, result.stdout + result.stderr)
    }

    func testAtomicBatchesAreWhollyPresentOrAbsentAfterSIGKILL() throws {
        let seed = Self.seed
        var random = SplitMix64(seed: seed)
        let directory = DaemonProcess.makeTemporaryDirectory(prefix: "scorebook-crash")
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try DaemonProcess.start(dataDirectory: directory)
        let token = try daemon.createUser("crash")
        let zoneBody: JSONValue = ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(Self.zone)]]]]]
        XCTAssertEqual(try daemon.post(Self.path("zones/modify"), token: token, json: zoneBody.serializedString()).status, 200)

        var everAcknowledged: Set<Int> = []
        var everAttempted: Set<Int> = []
        var lastBatch = 0
        var inFlightLanded = 0
        var inFlightLost = 0
        let started = Date()
        for round in 1...Self.rounds {
            let ledger = Ledger(firstBatch: lastBatch)
            let port = daemon.port
            let group = DispatchGroup()
            let writeDeadline = Date().addingTimeInterval(20)
            for _ in 0..<Self.writerCount {
                group.enter()
                Thread {
                    Self.write(port: port, token: token, ledger: ledger, deadline: writeDeadline)
                    group.leave()
                }.start()
            }
            let delay = Double.random(in: 0.3..<1.5, using: &random)
            Thread.sleep(forTimeInterval: delay)
            daemon.kill()
            XCTAssertEqual(group.wait(timeout: .now() + 30), .success, "round \(round): writers stop once the daemon is gone")
            XCTAssertEqual(ledger.refused, [], "round \(round): no batch is refused")
            lastBatch = ledger.lastBatch
            everAcknowledged.formUnion(ledger.acknowledged)
            everAttempted.formUnion(ledger.attempted)

            // The data directory as the crash left it, then as the restarted daemon serves it.
            let crashed = try Self.check(directory)
            XCTAssertTrue(crashed.ok, "round \(round): check after SIGKILL: \(crashed.output)")
            try daemon.restart()
            let present = try Self.batchesOnServer(daemon, token: token)
            for (batch, indexes) in present where indexes.count != Self.batchSize {
                XCTFail("round \(round): batch \(batch) is partly present: \(indexes.count) of \(Self.batchSize) records")
            }
            let missing = everAcknowledged.subtracting(present.keys)
            XCTAssertEqual(missing, [], "round \(round): acknowledged batches missing after the restart")
            let unknown = Set(present.keys).subtracting(everAttempted)
            XCTAssertEqual(unknown, [], "round \(round): batches no writer sent")
            let ends = try Self.lookUpEnds(daemon, token: token, batches: everAttempted.sorted())
            for (batch, found) in ends {
                let expected = present[batch] != nil
                XCTAssertTrue(found.first == expected && found.last == expected,
                              "round \(round): batch \(batch): lookup finds first \(found.first), last \(found.last); the feed says \(expected)")
            }
            let inFlight = ledger.attempted.subtracting(ledger.acknowledged)
            inFlightLanded += inFlight.filter { present[$0] != nil }.count
            inFlightLost += inFlight.filter { present[$0] == nil }.count
            let serving = try Self.check(directory)
            XCTAssertTrue(serving.ok, "round \(round): check while serving after the restart: \(serving.output)")
            print(String(format: "crash round %d: killed after %.2f s; %d batches acknowledged, %d in flight; %d batches (%d records) on the server",
                         round, delay, ledger.acknowledged.count, inFlight.count, present.count, present.count * Self.batchSize))
        }
        try daemon.stop()
        let final = try Self.check(directory)
        XCTAssertTrue(final.ok, "check after the last clean stop: \(final.output)")
        print("crash safety: \(Self.rounds) SIGKILL rounds survived (seed \(seed)); \(everAcknowledged.count) batches acknowledged "
              + "and present, \(everAttempted.count - everAcknowledged.count) in flight at a kill (\(inFlightLanded) landed whole, "
              + "\(inFlightLost) absent whole), none partial; "
              + String(format: "%.1f s", Date().timeIntervalSince(started)))
    }

    /// Several daemons: the same crash, of one of two daemons serving one PostgreSQL database. The
    /// survivor answers at once: every batch is wholly present or absent, every acknowledged batch
    /// is present, and `scorebookd check --database` is ok; the killed daemon restarts and agrees.
    func testAtomicBatchesAreWhollyPresentOrAbsentWhenADaemonOnPostgreSQLIsKilled() throws {
        if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
        var random = SplitMix64(seed: Self.seed)
        let url = try PostgresTestCluster.shared().createDatabase()
        let victim = try DaemonProcess.start(postgresURL: url)
        let survivor = try DaemonProcess.start(postgresURL: url)
        defer {
            victim.kill()
            survivor.kill()
        }
        let token = try victim.createUser("crash")
        let zoneBody: JSONValue = ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(Self.zone)]]]]]
        XCTAssertEqual(try victim.post(Self.path("zones/modify"), token: token, json: zoneBody.serializedString()).status, 200)
        var everAcknowledged: Set<Int> = []
        var everAttempted: Set<Int> = []
        var lastBatch = 0
        for round in 1...min(Self.rounds, 3) {
            let ledger = Ledger(firstBatch: lastBatch)
            let port = victim.port
            let group = DispatchGroup()
            let writeDeadline = Date().addingTimeInterval(20)
            for _ in 0..<Self.writerCount {
                group.enter()
                Thread {
                    Self.write(port: port, token: token, ledger: ledger, deadline: writeDeadline)
                    group.leave()
                }.start()
            }
            // Kill once the round has had an acknowledgement (a loaded machine can take seconds for
            // the first batch), then at a random moment while batches are in flight.
            let firstAcknowledgement = Date().addingTimeInterval(15)
            while ledger.acknowledgedCount == 0 && Date() < firstAcknowledgement { Thread.sleep(forTimeInterval: 0.05) }
            Thread.sleep(forTimeInterval: Double.random(in: 0.1..<1.0, using: &random))
            victim.kill()
            XCTAssertEqual(group.wait(timeout: .now() + 30), .success, "round \(round): writers stop once the daemon is gone")
            XCTAssertEqual(ledger.refused, [], "round \(round): no batch is refused")
            lastBatch = ledger.lastBatch
            everAcknowledged.formUnion(ledger.acknowledged)
            everAttempted.formUnion(ledger.attempted)
            // PostgreSQL rolls back the killed daemon's open transactions when its connections drop.
            var present: [Int: Set<Int>] = [:]
            let settle = Date().addingTimeInterval(20)
            repeat {
                present = try Self.batchesOnServer(survivor, token: token)
                if present.values.allSatisfy({ $0.count == Self.batchSize }) { break }
                Thread.sleep(forTimeInterval: 0.2)
            } while Date() < settle
            for (batch, indexes) in present where indexes.count != Self.batchSize {
                XCTFail("round \(round): batch \(batch) is partly present: \(indexes.count) of \(Self.batchSize) records")
            }
            XCTAssertEqual(everAcknowledged.subtracting(present.keys), [], "round \(round): acknowledged batches missing")
            XCTAssertEqual(Set(present.keys).subtracting(everAttempted), [], "round \(round): batches no writer sent")
            let check = try DaemonProcess.run("scorebookd", ["check", "--database", url], timeout: 60)
            XCTAssertEqual(check.status, 0, "round \(round): check: \(check.stdout) \(check.stderr)")
            try victim.restart()
            XCTAssertEqual(Set(try Self.batchesOnServer(victim, token: token).keys), Set(present.keys), "round \(round): both daemons agree")
        }
        XCTAssertFalse(everAcknowledged.isEmpty, "some batches were acknowledged before the kills")
    }
}
