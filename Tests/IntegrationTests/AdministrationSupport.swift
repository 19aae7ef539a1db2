import Foundation
import RecordModel
import XCTest

extension XCTestCase {
    /// Exactly one non-empty line, ending in a newline.
    func assertOneLine(_ text: String, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(lines.count, 2, "\(what): expected exactly one line on stderr, got \(text.debugDescription)", file: file, line: line)
        XCTAssertFalse(lines.first?.trimmingCharacters(in: .whitespaces).isEmpty ?? true, "\(what): the line says something",
                       file: file, line: line)
    }

    /// Runs `scorebookd ARGUMENTS… STORE` on the daemon's store and fails the test unless it exits 0; its output as JSON.
    @discardableResult
    func administer(_ daemon: DaemonProcess, _ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let result = try DaemonProcess.run("scorebookd", arguments + daemon.storeArguments)
        XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)", file: file, line: line)
        return try JSONValue.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// A store with everything a real one collects, made through the real binaries: alice's book
/// shared with bob (accepted and synced), an avatar (an asset), a catalog entry (a public record)
/// and a server-to-server key (which acts as a user of its own, named `key-…`).
struct PopulatedStore {
    let alice: CLIMachine
    let bob: CLIMachine
    let aliceRecordName: String
    let bobRecordName: String
    let aliceToken: String
    let bobToken: String

    init(_ daemon: DaemonProcess, scratch: URL) throws {
        let aliceInfo = try daemon.createUserInfo("alice", email: "alice@example.com")
        let bobInfo = try daemon.createUserInfo("bob", email: "bob@example.com")
        (aliceRecordName, aliceToken, bobRecordName, bobToken) = (aliceInfo.userRecordName, aliceInfo.token, bobInfo.userRecordName, bobInfo.token)
        alice = CLIMachine("alice")
        bob = CLIMachine("bob")
        try alice.login(daemon, token: aliceToken)
        try bob.login(daemon, token: bobToken)
        try alice.run("book", "create", "friday")
        try alice.run("--book", "friday", "person", "add", "Ann")
        try alice.run("--book", "friday", "game", "add", "Go")
        let picture = scratch.appendingPathComponent("ann.png")
        // A PNG as far as its first bytes go: the CLI takes only pictures.
        try Data(pngSignature + (8..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: picture)
        try alice.run("--book", "friday", "person", "avatar", "Ann", picture.path)
        try alice.sync()
        try alice.run("book", "share", "friday", "--with", "bob@example.com")
        try bob.run("book", "accept", "friday")
        try bob.sync()
        try alice.run("game", "add", "Golf")
        try alice.run("catalog", "publish", "Golf", "--description", "Nine holes on paper")
        let key = scratch.appendingPathComponent("server-key.pem")
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key.path]
        try openssl.run()
        guard DaemonProcess.waitForExit(openssl, timeout: 30), openssl.terminationStatus == 0 else { throw DaemonError("openssl ecparam failed") }
        let added = try DaemonProcess.run("scorebookd", ["key", "add", "--public-key", key.path] + daemon.storeArguments)
        guard added.status == 0 else { throw DaemonError("key add: \(added.stderr)") }
    }

    /// The names of the books `machine` has after a sync.
    static func books(_ machine: CLIMachine) throws -> [String] {
        try machine.sync()
        return try machine.json("book", "list").arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
    }
}

extension XCTestCase {
    /// `scorebookd check` finds nothing wrong with a store that holds shares, assets, public
    /// records and a server key (a share record is never in the query counts, by design).
    func assertCheckPassesOnAPopulatedStore(_ daemon: DaemonProcess, file: StaticString = #filePath, line: UInt = #line) throws {
        let scratch = DaemonProcess.makeTemporaryDirectory(prefix: "check-populated")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let store = try PopulatedStore(daemon, scratch: scratch)
        XCTAssertEqual(Set(try PopulatedStore.books(store.bob)), ["ScorebookData", "friday"], file: file, line: line)
        for _ in 0..<2 {
            let check = try DaemonProcess.run("scorebookd", ["check"] + daemon.storeArguments)
            XCTAssertEqual(check.status, 0, "\(check.stdout) \(check.stderr)", file: file, line: line)
            XCTAssertEqual(check.stdout, "{\"ok\":true,\"problems\":[]}\n", file: file, line: line)
            try daemon.stop()  // and again on the store at rest
        }
    }
}
