import Foundation
import Logging
import PostgresRecordStore
import RecordClient
import RecordModel
import RecordServer
import RecordStore
import SQLiteRecordStore
@testable import Scorebook
import SyncEngine
import TestSupport

/// What one seed did and found.
struct ScenarioReport {
    var seed: UInt64
    var steps = 0
    var edits = 0
    var requests = 0
    var polls = 0
    var watcherSyncs = 0
    var faults: [Fault: Int] = [:]
    var syncs = 0
    var failedSyncs = 0
    var watchProblems = 0
    var finalRounds = 0
    var serverRecords = 0
    var deletedRecords = 0
    var secondsOfBackOff = 0.0
    var problems: [String] = []
    /// Every step, sync and watch problem, in order.
    var log: [String] = []

    var summary: String {
        let faultText = faults.sorted { $0.key < $1.key }.map { "\($0.key.rawValue)=\($0.value)" }.joined(separator: " ")
        return "seed \(seed): \(steps) steps (\(edits) edits, \(syncs) syncs, \(failedSyncs) failed under faults), "
            + "\(requests) requests (\(polls) notification polls, \(watcherSyncs) fetches by the watcher), faults [\(faultText)], "
            + "\(watchProblems) watch problems, "
            + String(format: "%.1f s of back-off asked, ", secondsOfBackOff)
            + "converged after \(finalRounds) fault-free rounds on \(serverRecords) records (\(deletedRecords) deleted)"
    }
}

/// One seed: three machines edit a scorebook and sync through fault-injecting transports to one
/// real `RecordAPI` over a real `SQLiteRecordStore`; machine 0 runs `watch` all along (its
/// notification polls delayed and reordered). Then faults stop, every machine syncs until a
/// round moves nothing, and the result is checked against the log of every edit.
final class FaultScenario {
    let seed: UInt64
    let steps: Int
    let machineCount = 3
    let rates: FaultRates
    /// The watcher backs off in real time (0.5 s and more after each failure), so it gets fewer
    /// general faults and more poll faults, to poll often within a seed's second.
    let watcherRates = FaultRates(requestLost: 0.01, responseLost: 0.02, duplicated: 0.03, throttled: 0.01, tryAgainLater: 0.01,
                                  pollDelayed: 0.3, pollReordered: 0.25)

    /// A PostgreSQL database to run on instead of SQLite: two stores (two daemons' worth of
    /// pools, each behind its own `RecordAPI`), machine i talking to daemon i % 2, so the watcher
    /// on daemon 0 is woken by edits committed through daemon 1 (LISTEN/NOTIFY).
    let postgresURL: String?

    init(seed: UInt64, steps: Int = 150, rates: FaultRates = FaultRates(), postgresURL: String? = nil) {
        self.seed = seed
        self.steps = steps
        self.rates = rates
        self.postgresURL = postgresURL
    }

    /// tmpfs when there is one: SQLite's fsyncs cost nothing there, and nothing here needs them.
    static func temporaryRoot() -> URL {
        let shm = URL(fileURLWithPath: "/dev/shm")
        let base = FileManager.default.isWritableFile(atPath: shm.path) ? shm : FileManager.default.temporaryDirectory
        let url = base.appendingPathComponent("scorebook-reliability-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "reliability", factory: { _ in SwiftLogNoOpLogHandler() })
        logger.logLevel = .critical
        return logger
    }

    func run() async throws -> ScenarioReport {
        var report = ScenarioReport(seed: seed)
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        var stores: [any RecordStorage] = []
        if let postgresURL {
            for _ in 0..<2 { stores.append(try await PostgresRecordStore.open(url: postgresURL, logger: Self.quietLogger)) }
        } else {
            stores.append(SQLiteStorage(try SQLiteRecordStore(directory: root.appendingPathComponent("server").path)))
        }
        let transports = stores.map { InProcessTransport(api: RecordAPI(store: $0, requestsPerSecond: 1_000_000, logger: Self.quietLogger)) }
        let inProcess = transports[0]
        let token = try await stores[0].createUser(name: "fault\(seed)").token
        let clock = EditClock()
        let log = EditLog()
        let machines = try (0..<machineCount).map { index in
            try SyncMachine(index: index, directory: root, api: transports[index % transports.count], token: token,
                            seed: seed &* 1_000_003 &+ UInt64(index), rates: index == 0 ? watcherRates : rates, clock: clock, log: log)
        }

        for machine in machines {
            let index = machine.index
            machine.transport.trace = { line in log.note("  m\(index) -> \(line)") }
        }
        // Machine 0 watches throughout the faulty phase.
        let watcher = machines[0]
        let problemCounter = SleepBox()
        let watch = Task {
            try await watcher.engine.watch(until: Date().addingTimeInterval(120), pollTimeout: 1, onChange: { change in
                log.note("watch m0 applied \(change.kind.rawValue) \(change.recordName)")
            }, onProblem: { problem in
                problemCounter.add(1)
                log.note("watch problem: \(problem)")
            })
        }

        var random = SplitMix64(seed: seed)
        for step in 0..<steps {
            // A moment for the watcher to poll and sync between steps.
            try await Task.sleep(nanoseconds: 4_000_000)
            let machine = machines[Int.random(in: 0..<machineCount, using: &random)]
            let roll = Int.random(in: 0..<100, using: &random)
            if roll >= 67, machine.index != 0 {
                report.syncs += 1
                do {
                    try await machine.engine.sync()
                    log.note("\(step) m\(machine.index) sync ok")
                } catch {
                    report.failedSyncs += 1
                    log.note("\(step) m\(machine.index) sync failed: \(error)")
                }
                continue
            }
            do {
                if let line = try edit(machine, roll: roll % 67, step: step, random: &random) {
                    report.edits += 1
                    log.note("\(step) m\(machine.index) \(line)")
                }
            } catch {
                log.note("\(step) m\(machine.index) edit failed: \(error)")
            }
        }
        report.steps = steps
        watch.cancel()
        _ = await watch.result
        report.polls = watcher.transport.polls
        report.watcherSyncs = watcher.transport.fetches

        // Faults off: sync round after round until a whole round moves nothing (bounded).
        log.note("faults off")
        for machine in machines { machine.transport.isEnabled = false }
        var quiet = false
        var lastError = ""
        while !quiet && report.finalRounds < 8 {
            report.finalRounds += 1
            quiet = true
            for machine in machines {
                do {
                    let summary = try await machine.engine.sync()
                    if summary.sentSaved + summary.sentDeleted + summary.receivedSaved + summary.receivedDeleted > 0 { quiet = false }
                } catch {
                    quiet = false
                    lastError = "m\(machine.index): \(error)"
                }
            }
        }
        if !quiet { report.problems.append("still not quiet after \(report.finalRounds) fault-free rounds; last error \(lastError)") }

        for machine in machines {
            report.requests += machine.transport.requests
            report.secondsOfBackOff += machine.secondsOfBackOff
            for (fault, count) in machine.transport.injected { report.faults[fault, default: 0] += count }
        }
        report.watchProblems = Int(problemCounter.total)
        let serverRecords = try await Self.serverRecords(inProcess, token: token)
        report.serverRecords = serverRecords.count
        report.deletedRecords = log.created.keys.filter { log.shouldBeGone($0) }.count
        report.problems += try check(server: serverRecords, machines: machines, log: log)
        report.log = log.lines
        for store in stores { await store.close() }
        if !report.problems.isEmpty {
            report.problems.append("log (last 400 lines):\n" + log.lines.suffix(400).joined(separator: "\n"))
        }
        return report
    }

    // MARK: Random edits

    /// Makes one random edit on `machine`; returns what it did, or nil when there was nothing to edit.
    func edit(_ machine: SyncMachine, roll: Int, step: Int, random: inout SplitMix64) throws -> String? {
        let now = machine.clock.now()
        func pick<T>(_ list: [T]) -> T? { list.isEmpty ? nil : list[Int.random(in: 0..<list.count, using: &random)] }
        switch roll {
        case 0..<9:
            let person = Person(firstName: "P\(step)", lastName: Bool.random(using: &random) ? "L\(step)" : nil, modificationDate: now)
            try machine.create([person], requiring: [])
            return "add person \(person.recordName)"
        case 9..<14:
            let game = Game(name: "G\(step)", lowScoreWins: Bool.random(using: &random), modificationDate: now)
            try machine.create([game], requiring: [])
            return "add game \(game.recordName)"
        case 14..<23:
            guard let game = pick(try machine.entities(Game.self)) else { return nil }
            let people = try machine.entities(Person.self).shuffled(using: &random)
            guard !people.isEmpty else { return nil }
            let chosen = Array(people.prefix(Int.random(in: 1...min(3, people.count), using: &random)))
            let match = Match(game: game.recordName, startDate: now, modificationDate: now)
            let players = chosen.enumerated().map {
                Player(match: match.recordName, person: $0.element.recordName, seat: Int64($0.offset + 1), modificationDate: now)
            }
            let made = try machine.create([match] + players, requiring: [game.recordName] + chosen.map(\.recordName))
            return made ? "start match \(match.recordName) of \(game.recordName) with \(players.count)" : nil
        case 23..<37:
            guard let player = pick(try machine.entities(Player.self)) else { return nil }
            let score = Score(player: player.recordName, value: Double(Int.random(in: -5...30, using: &random)),
                              round: Int64(Int.random(in: 1...5, using: &random)), modificationDate: now)
            let made = try machine.create([score], requiring: [player.recordName])
            return made ? "score \(score.recordName) for \(player.recordName)" : nil
        case 37..<41:
            guard let match = pick(try machine.entities(Match.self)) else { return nil }
            try machine.change(Match.self, match.recordName) { $0.endDate = now }
            return "finish \(match.recordName)"
        case 41..<47:
            guard let game = pick(try machine.entities(Game.self)) else { return nil }
            let rename = Bool.random(using: &random)
            let flag = Bool.random(using: &random)
            try machine.change(Game.self, game.recordName) { game in
                if rename { game.name = "G\(step)m\(machine.index)" } else { game.lowScoreWins = flag }
            }
            return "edit game \(game.recordName) \(rename ? "name" : "lowScoreWins")"
        case 47..<54:
            guard let person = pick(try machine.entities(Person.self)) else { return nil }
            let which = Int.random(in: 0..<3, using: &random)
            try machine.change(Person.self, person.recordName) { person in
                switch which {
                case 0: person.emailAddress = "p\(step)m\(machine.index)@example.com"
                case 1: person.lastName = person.lastName == nil ? "L\(step)m\(machine.index)" : nil
                default: person.firstName = "F\(step)m\(machine.index)"
                }
            }
            return "edit person \(person.recordName) #\(which)"
        case 54..<58:
            guard let match = pick(try machine.entities(Match.self)) else { return nil }
            return "delete match: \(try machine.delete(match.recordName))"
        case 58..<60:
            guard let person = pick(try machine.entities(Person.self)) else { return nil }
            return "delete person: \(try machine.delete(person.recordName))"
        case 60..<62:
            guard let game = pick(try machine.entities(Game.self)) else { return nil }
            return "delete game: \(try machine.delete(game.recordName))"
        default:
            guard let score = pick(try machine.entities(Score.self)) else { return nil }
            return "delete score: \(try machine.delete(score.recordName))"
        }
    }

    // MARK: Checking

    /// The zone as the server holds it, read from the change feed from the beginning.
    static func serverRecords(_ transport: InProcessTransport, token: String) async throws -> [String: Record] {
        let client = RecordClient(endpoint: ServerEndpoint(baseURL: URL(string: "http://\(InProcessTransport.host)")!, token: token),
                                  transport: transport)
        var records: [String: Record] = [:]
        var syncToken: String?
        for _ in 0..<10_000 {
            let page = try await client.fetchZoneChanges(zoneID: Scorebook.zoneID, syncToken: syncToken)
            for change in page.changes {
                switch change {
                case .saved(let record): records[record.recordName] = record
                case .deleted(let name, _, _): records[name] = nil
                }
            }
            syncToken = page.syncToken
            if !page.moreComing { return records }
        }
        throw SyncError("changes/zone never ended")
    }

    /// Every way the converged state breaks the contract, as lines to report.
    func check(server: [String: Record], machines: [SyncMachine], log: EditLog) throws -> [String] {
        var problems: [String] = []
        let serverNames = Set(server.keys)

        // Every machine shows exactly the server's records.
        for machine in machines {
            let local = try machine.records()
            let localNames = Set(local.keys)
            if localNames != serverNames {
                problems.append("m\(machine.index) lacks \(serverNames.subtracting(localNames).sorted()) "
                                + "and has extra \(localNames.subtracting(serverNames).sorted())")
            }
            for (name, record) in local {
                guard let onServer = server[name] else { continue }
                if record.recordType != onServer.recordType || record.fields != onServer.fields {
                    problems.append("m\(machine.index) \(name) differs: local \(record.fields) server \(onServer.fields)")
                }
            }
            let pending = try machine.store.pendingChangeCount()
            let parked = try machine.store.parkedChanges()
            let waiting = try machine.store.waitingRecordCount()
            if pending != 0 || !parked.isEmpty || waiting != 0 {
                problems.append("m\(machine.index): \(pending) pending, parked \(parked), \(waiting) waiting")
            }
        }

        // Nothing lost, nothing resurrected, nothing invented.
        let expected = Set(log.created.keys.filter { !log.shouldBeGone($0) })
        let lost = expected.subtracting(serverNames)
        if !lost.isEmpty { problems.append("lost (created, never deleted, missing on the server): \(lost.sorted())") }
        let extra = serverNames.subtracting(expected)
        let resurrected = extra.filter { log.created[$0] != nil }
        if !resurrected.isEmpty { problems.append("resurrected (deleted, yet on the server): \(resurrected.sorted())") }
        let invented = extra.filter { log.created[$0] == nil }
        if !invented.isEmpty { problems.append("invented (no machine created them): \(invented.sorted())") }

        // No orphans: no live record points with DELETE_SELF at a missing one.
        for (name, record) in server {
            for (field, reference) in record.references where reference.action != .none && server[reference.recordName] == nil {
                problems.append("orphan: \(name).\(field) -> missing \(reference.recordName)")
            }
        }

        // Field values: each one was written by some machine; a field only one machine ever
        // wrote holds that machine's last value.
        for (name, record) in server {
            let writes = log.lastWrite[name] ?? [:]
            for (field, value) in record.fields where field != RecordMerge.modificationDateField {
                if !(log.everWritten[name]?[field] ?? []).contains(value) {
                    problems.append("\(name).\(field) = \(value.value.serializedString()) was never written by any machine")
                }
            }
            for (field, byMachine) in writes where byMachine.count == 1 {
                let (machine, last) = byMachine.first!
                if record.fields[field] != last {
                    problems.append("\(name).\(field): only m\(machine) wrote it, last \(last.map { $0.value.serializedString() } ?? "removed"), "
                                    + "server has \(record.fields[field].map { $0.value.serializedString() } ?? "nothing")")
                }
            }
        }
        return problems
    }
}
