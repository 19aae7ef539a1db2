import Foundation
import RecordModel
import XCTest
import TestSupport

/// Several stores make random edits and syncs; after final syncs every store shows exactly the
/// server's records and the server holds no orphan. Seeds are fixed (1 and 2); set
/// SCOREBOOK_SEEDS=3,4,5 to run more.
final class CLIRandomizedTests: XCTestCase {

    static var seeds: [UInt64] {
        let extra = (ProcessInfo.processInfo.environment["SCOREBOOK_SEEDS"] ?? "")
            .split(separator: ",").compactMap { UInt64($0.trimmingCharacters(in: .whitespaces)) }
        return extra.isEmpty ? [1, 2] : extra
    }

    func testRandomEditsAndSyncsConvergeToTheServer() throws {
        for seed in Self.seeds {
            try runScenario(seed: seed, steps: 45)
        }
    }

    /// Several daemons: the same run with each store attached to a different one of three daemons
    /// serving one PostgreSQL database (seed 1 in CI; SCOREBOOK_SEEDS for more).
    func testRandomEditsThroughThreeDaemonsOnOnePostgreSQLDatabaseConverge() throws {
        if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
        for seed in Self.seeds.prefix(ProcessInfo.processInfo.environment["SCOREBOOK_SEEDS"] == nil ? 1 : Int.max) {
            try runScenario(seed: seed, steps: 45, postgresDaemons: 3)
        }
    }

    /// `postgresDaemons` > 0: that many daemons on one fresh PostgreSQL database, store i talking
    /// to daemon i; otherwise one daemon on SQLite.
    func runScenario(seed: UInt64, steps: Int, postgresDaemons: Int = 0) throws {
        var random = SplitMix64(seed: seed)
        var daemons: [DaemonProcess] = []
        defer { for daemon in daemons { try? daemon.stop() } }
        if postgresDaemons > 0 {
            let url = try PostgresTestCluster.shared().createDatabase()
            for _ in 0..<postgresDaemons { daemons.append(try DaemonProcess.start(postgresURL: url)) }
        } else {
            daemons.append(try DaemonProcess.start())
        }
        let daemon = daemons[0]
        let token = try daemon.createUser("user\(seed)")
        let stores = ["a", "b", "c"].map { CLIMachine("seed\(seed)-\($0)") }
        for (index, store) in stores.enumerated() { try store.login(daemons[index % daemons.count], token: token) }
        var log: [String] = []

        for step in 0..<steps {
            let store = stores.randomElement(using: &random)!
            let people = try store.json("person", "list").arrayValue ?? []
            let games = try store.json("game", "list").arrayValue ?? []
            let matches = try store.json("match", "list").arrayValue ?? []
            func pick(_ list: [JSONValue]) -> String? { list.randomElement(using: &random)?["recordName"]?.stringValue }
            var arguments: [String]
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<12: arguments = ["person", "add", "P\(seed)x\(step)"]
            case 12..<20: arguments = ["game", "add", "G\(seed)x\(step)"]
            case 20..<32:
                guard let game = pick(games), people.count >= 2 else { arguments = ["person", "add", "Q\(step)"]; break }
                let players = Array(people.shuffled(using: &random).prefix(Int.random(in: 2...min(4, people.count), using: &random)))
                arguments = ["match", "start", "--game", game, "--players",
                             players.compactMap { $0["recordName"]?.stringValue }.joined(separator: ",")]
            case 32..<50:
                guard let match = pick(matches) else { arguments = ["game", "add", "H\(step)"]; break }
                let show = try store.json("match", "show", match)
                guard let player = show["players"]?.arrayValue?.randomElement(using: &random)?["recordName"]?.stringValue else {
                    arguments = ["status"]; break
                }
                // A finished match takes no score until it is reopened.
                if show["endDate"]?.stringValue != nil {
                    arguments = ["match", "reopen", match]
                    break
                }
                arguments = ["score", "add", "--match", match, "--player", player, String(Int.random(in: -5...20, using: &random))]
            case 50..<56:
                guard let match = pick(matches) else { arguments = ["status"]; break }
                arguments = ["match", "finish", match]
            case 56..<64:
                guard let game = pick(games) else { arguments = ["status"]; break }
                arguments = ["game", "edit", game, "--name", "G\(seed)r\(step)"]
            case 64..<68:
                guard let person = pick(people) else { arguments = ["status"]; break }
                arguments = ["person", "edit", person, "--email", "p\(step)@example.com"]
            case 68..<72:
                guard let match = pick(matches) else { arguments = ["status"]; break }
                arguments = ["match", "delete", match, "--yes"]
            case 72..<75:
                guard let person = pick(people) else { arguments = ["status"]; break }
                arguments = ["person", "delete", person, "--yes"]
            case 75..<77:
                guard let game = pick(games) else { arguments = ["status"]; break }
                arguments = ["game", "delete", game, "--yes"]
            default:
                arguments = ["sync"]
            }
            log.append("\(store.name): \(arguments.joined(separator: " "))")
            try store.run(arguments)
        }

        // Final syncs, round after round until a whole round moves nothing (bounded).
        var quiet = false
        for _ in 0..<6 where !quiet {
            quiet = true
            for store in stores {
                let summary = try store.sync()
                if summary.sent > 0 || summary.received > 0 { quiet = false }
            }
        }
        XCTAssertTrue(quiet, "seed \(seed): stores still exchanging changes after 6 rounds\n\(log.joined(separator: "\n"))")
        let server = try ServerZone(daemon: daemon, token: token)
        XCTAssertEqual(server.orphans, [], "seed \(seed): orphans on the server")
        let first = try stores[0].snapshot()
        for store in stores {
            let snapshot = try store.snapshot()
            try assertStore(store, equals: server, "seed \(seed) store \(store.name)", snapshot: snapshot)
            XCTAssertEqual(snapshot, first, "seed \(seed): \(store.name) differs from \(stores[0].name)")
            XCTAssertEqual(try store.json("status")["pending"]?.int64Value, 0, "seed \(seed) \(store.name)")
        }
    }
}
