import Foundation
import RecordModel
import Scorebook

/// (7) CLI cold start: wall time from `posix_spawn` to `wait4` of the release `scorebook`, as
/// a shell runs it, for `match show` on a lived-in store and a `sync` with nothing to send or
/// fetch (against a real `scorebookd`). Baselines in the same run, interleaved with the
/// measured commands so that noise hits all alike: `/bin/true` (the cost of a process) and
/// `scorebook --help` (the cost of loading the Swift runtime, Foundation and the binary).
/// The page cache is warm: "cold" means a new process, as for every command a user types.
func cliColdStart(_ options: BenchOptions) async throws -> [String: JSONValue] {
    let scorebook = try siblingBinary("scorebook")
    let daemon = try DaemonUnderTest(directory: temporaryDirectory("coldstart-daemon"), container: "iCloud.scorebook",
                                     environment: "production")
    defer { _ = try? daemon.stop() }
    let storeDirectory = temporaryDirectory("coldstart-store")
    let storePath = storeDirectory + "/scorebook.sqlite"
    let match = try await livedInScorebook(at: storePath, daemon: daemon)

    let commands: [(name: String, path: String, arguments: [String])] = [
        ("true", "/bin/true", []),
        ("help", scorebook, ["--help"]),
        ("matchShow", scorebook, ["--store", storePath, "match", "show", match]),
        ("sync", scorebook, ["--store", storePath, "sync"]),
    ]
    var samples = [String: [Double]]()
    // One unmeasured run of each loads the binaries into the page cache (and shows any error).
    for command in commands {
        let exit = try Subprocess(command.path, command.arguments, keepStandardError: true).wait()
        guard exit.status == 0 else { throw Subprocess.Failure(description: "\(command.name) exited \(exit.status)") }
    }
    for _ in 0..<options.runs {
        for command in commands {
            let child = try Subprocess(command.path, command.arguments)
            let exit = try child.wait()
            guard exit.status == 0 else {
                throw Subprocess.Failure(description: "\(command.name) exited \(exit.status): \(command.arguments.joined(separator: " "))")
            }
            samples[command.name, default: []].append(exit.seconds * 1000)
        }
    }
    var figures: [String: JSONValue] = ["runs": .int(Int64(options.runs))]
    let trueMedian = Stats(samples: samples["true"]!).median
    let helpMedian = Stats(samples: samples["help"]!).median
    for command in commands {
        let stats = Stats(samples: samples[command.name]!)
        figures["\(command.name)MillisecondsMedian"] = .double(stats.median)
        figures["\(command.name)MillisecondsP99"] = .double(stats.p99)
        figures["\(command.name)PeakMegabytes"] = .double(Double(try peakResidentSize(command.path, command.arguments).bytes) / 1_048_576)
        if command.name != "true" { figures["\(command.name)MinusTrueMilliseconds"] = .double(stats.median - trueMedian) }
        if command.name == "matchShow" || command.name == "sync" {
            figures["\(command.name)MinusHelpMilliseconds"] = .double(stats.median - helpMedian)
        }
    }
    try? FileManager.default.removeItem(atPath: storeDirectory)
    return figures
}

/// A store with a few months of play, logged in to `daemon` and fully synced: 8 people,
/// 3 games, 30 finished matches of 4 players with 10 rounds of scores (1,361 records).
/// Returns the record name of the last match.
func livedInScorebook(at path: String, daemon: DaemonUnderTest) async throws -> String {
    let book = try Scorebook(storePath: path)
    try await book.login(server: daemon.baseURL, token: daemon.token)
    let people = ["Ann Lee", "Bob Stone", "Cleo Park", "Dan Ruiz", "Eve Moss", "Finn Hart", "Gus Kim", "Hana Ito"]
    for name in people {
        let parts = name.split(separator: " ").map(String.init)
        _ = try book.addPerson(firstName: parts[0], lastName: parts[1])
    }
    let games = ["Catan", "Carcassonne", "Azul"]
    for game in games { _ = try book.addGame(name: game) }
    var last = ""
    for index in 0..<30 {
        let players = (0..<4).map { people[(index + $0 * 2) % people.count].split(separator: " ")[0] }.map(String.init)
        let match = try book.startMatch(gameReference: games[index % games.count], playerReferences: players)
        for round in 1...10 {
            for (seat, player) in players.enumerated() {
                _ = try book.addScore(matchReference: match.recordName, playerReference: player,
                                      value: Double((index * 7 + round * 3 + seat * 5) % 13), round: Int64(round))
            }
        }
        _ = try book.finishMatch(reference: match.recordName)
        last = match.recordName
    }
    let before = try book.store.recordCount()
    try await book.sync()
    let after = try book.store.recordCount()
    guard after == before, before == 1361 else {
        throw Subprocess.Failure(description: "the lived-in store held \(before) records before its sync and \(after) after")
    }
    return last
}
