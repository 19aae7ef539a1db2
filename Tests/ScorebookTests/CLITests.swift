import Foundation
import XCTest

/// Runs the built `scorebook` binary as a subprocess, as a user would, and compares output.
final class CLITests: XCTestCase {
    struct Run {
        var status: Int32
        var output: String
        var error: String
        var lines: [String] { output.split(separator: "\n").map(String.init) }
    }

    var storePath: String!

    override func setUpWithError() throws {
        storePath = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)/book.sqlite").path
        guard FileManager.default.isExecutableFile(atPath: Self.binary.path) else {
            throw XCTSkip("build the scorebook product first (swift build); not found at \(Self.binary.path)")
        }
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: (storePath as NSString).deletingLastPathComponent)
    }

    static var binary: URL {
        #if os(macOS)
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            return bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("scorebook")
        }
        #endif
        return Bundle.main.bundleURL.appendingPathComponent("scorebook")
    }

    @discardableResult
    func scorebook(_ arguments: String..., useStoreFlag: Bool = true, environment: [String: String] = [:]) throws -> Run {
        try scorebook(arguments: arguments, useStoreFlag: useStoreFlag, environment: environment)
    }

    func scorebook(arguments: [String], useStoreFlag: Bool = true, environment: [String: String] = [:]) throws -> Run {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = (useStoreFlag ? ["--store", storePath] : []) + arguments
        var env = ProcessInfo.processInfo.environment
        env["SCOREBOOK_STORE"] = nil
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, output: String(decoding: outData, as: UTF8.self),
                   error: String(decoding: errData, as: UTF8.self))
    }

    func json(_ run: Run) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(run.output.utf8), options: [.fragmentsAllowed])
    }

    func testScorekeepingOfflineFromAddToStandings() throws {
        let ann = try scorebook("person", "add", "Ann", "Lee", "--email", "ann@example.com").output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(ann.hasPrefix("Person|~|"), ann)
        let bob = try json(scorebook("person", "add", "Bob", "--json")) as? [String: Any]
        XCTAssertEqual(bob?["recordType"] as? String, "Person")
        XCTAssertEqual(bob?["firstName"] as? String, "Bob")
        XCTAssertNotNil(bob?["modificationDate"] as? String)
        let game = try scorebook("game", "add", "Ticket", "to", "Ride").output.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(game.hasPrefix("Game|~|"))

        XCTAssertEqual(try scorebook("person", "list").lines, [
            "NAME     EMAIL            RECORD NAME", "Ann Lee  ann@example.com  \(ann)", "Bob                       \(bob!["recordName"]!)",
        ])

        let match = try scorebook("match", "start", "--game", "ticket to ride", "--players", "Ann,Bob").output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(try scorebook("score", "add", "--match", match, "--player", "Ann", "10").status, 0)
        XCTAssertEqual(try scorebook("score", "add", "--match", match, "--player", "Bob", "-3").status, 0, "negative scores")
        XCTAssertEqual(try scorebook("score", "add", "--match", match, "--player", ann, "2.5", "--round", "2").status, 0)
        let prefix = String(match.dropFirst("Match|~|".count).prefix(8))
        XCTAssertEqual(try scorebook("match", "finish", prefix).status, 0, "a UUID prefix is a REF")

        let shown = try json(scorebook("match", "show", match, "--json")) as? [String: Any]
        let players = shown?["players"] as? [[String: Any]]
        XCTAssertEqual(players?.map { $0["name"] as? String }, ["Ann Lee", "Bob"])
        XCTAssertEqual(players?.map { $0["total"] as? Double }, [12.5, -3])
        XCTAssertEqual(players?.map { $0["rank"] as? Int }, [1, 2])
        XCTAssertEqual(shown?["winner"] as? String, ann)
        XCTAssertEqual(try scorebook("match", "show", match).lines.suffix(4), [
            "RANK  PLAYER   TOTAL", "1     Ann Lee  12.5", "2     Bob      -3", "winner: Ann Lee",
        ])

        XCTAssertEqual(try scorebook("standings").lines, [
            "PERSON   PLAYED  WON  WIN RATE  AVERAGE SCORE", "Ann Lee  1       1    100%      12.5", "Bob      1       0    0%        -3",
        ])
        let standings = try json(scorebook("standings", "--json")) as? [[String: Any]]
        XCTAssertEqual(standings?.first?["person"] as? String, ann)
        XCTAssertEqual(standings?.first?["winRate"] as? Double, 1)

        let list = try json(scorebook("match", "list", "--game", "Ticket to Ride", "--json")) as? [[String: Any]]
        XCTAssertEqual(list?.map { $0["recordName"] as? String }, [match])
        XCTAssertEqual(list?.first?["game"] as? String, game)

        let deleted = try scorebook("game", "delete", "Ticket to Ride", "--yes")
        XCTAssertEqual(deleted.lines, ["deleted Game \"Ticket to Ride\" (\(game)) and 6 records that depended on it"])
        XCTAssertEqual((try json(scorebook("match", "list", "--json")) as? [Any])?.count, 0)

        let status = try json(scorebook("status", "--json")) as? [String: Any]
        XCTAssertTrue(status?["account"] is NSNull)
        XCTAssertEqual(status?["syncEnabled"] as? Bool, true)
        XCTAssertEqual(status?["pending"] as? Int, 2, "two people waiting to be uploaded; the game was never sent")
    }

    func testErrorsAreOneLineOnStandardErrorWithTheirExitStatus() throws {
        try scorebook("person", "add", "Ann", "Lee")
        try scorebook("person", "add", "Ann", "Smith")
        try scorebook("game", "add", "Catan")
        for (arguments, status) in [
            (["match", "start", "--game", "Catan", "--players", "Ann"], Int32(2)),
            (["match", "start", "--game", "Chess", "--players", "Ann Lee"], 2),
            (["match", "show", "nothing"], 2),
            (["person", "frobnicate"], 64),
            (["score", "add", "--match", "x", "--player", "y"], 64),
            (["sync"], 1),
        ] {
            let run = try scorebook(arguments: arguments)
            XCTAssertEqual(run.status, status, "\(arguments): \(run.error)")
            XCTAssertEqual(run.error.split(separator: "\n").count, 1, "\(arguments): \(run.error)")
            XCTAssertTrue(run.error.hasPrefix("error: "), run.error)
            XCTAssertEqual(run.output, "")
        }
    }

    func testTheStoreComesFromTheFlagInAnyPositionOrTheEnvironment() throws {
        try scorebook("game", "add", "Catan", useStoreFlag: false, environment: ["SCOREBOOK_STORE": storePath])
        try scorebook("game", "add", "Go", "--store", storePath, useStoreFlag: false)
        let names = try json(scorebook("--json", "game", "list")) as? [[String: Any]]
        XCTAssertEqual(names?.map { $0["name"] as? String }, ["Catan", "Go"])
        XCTAssertEqual(try scorebook("--help", useStoreFlag: false).status, 0)
    }
}
