import Foundation
import RecordModel
import XCTest

/// Where the store is when no flag names it, the modes of its files, and backup and restore,
/// through the real `scorebookd`.
final class DaemonStoreLocationTests: XCTestCase {
    var scratch: URL!

    override func setUpWithError() throws {
        scratch = DaemonProcess.makeTemporaryDirectory(prefix: "store-location")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// The variables that name a store, all cleared unless given.
    func environment(_ given: [String: String]) -> [String: String] {
        ["SCOREBOOK_DATABASE_URL": "", "SCOREBOOK_DATA_DIR": "", "XDG_DATA_HOME": ""].merging(given) { $1 }
    }

    func scorebookd(_ arguments: [String], _ variables: [String: String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try DaemonProcess.runWithEnvironment("scorebookd", arguments, environment: environment(variables))
    }

    func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    func testServeAndEveryCommandFindTheStoreInTheEnvironmentOrTheXDGDefault() throws {
        let dataHome = scratch.appendingPathComponent("xdg")
        let variables = ["XDG_DATA_HOME": dataHome.path, "HOME": scratch.appendingPathComponent("home").path]
        let (process, stdout, stderr) = try DaemonProcess.spawn("scorebookd", ["serve", "--port", "0"], environment: environment(variables))
        defer { if process.isRunning { sendSignal(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        let line = try XCTUnwrap(stdout.waitForFirstLine(timeout: DaemonProcess.readinessTimeout), stderr.text)
        let port = try XCTUnwrap(DaemonProcess.parseReadinessLine(line))
        let directory = dataHome.appendingPathComponent("scorebookd").path
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory + "/scorebook.sqlite"), "serve made the store at the XDG default")
        XCTAssertEqual(try mode(directory), 0o700)

        // The administration commands find the same store with no flag at all.
        let created = try scorebookd(["user", "create", "ann"], variables)
        XCTAssertEqual(created.status, 0, created.stderr)
        let token = try XCTUnwrap(try JSONValue.parse(created.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["token"]?.stringValue)
        let answer = try RawHTTP.send(port: port, method: "POST", path: "/database/1/\(DaemonTestCase.container)/development/private/users/current",
                                      headers: [("Authorization", "Bearer \(token)")], body: Array("{}".utf8), timeout: 10)
        XCTAssertEqual(answer.status, 200, "the serving daemon knows the user: \(answer.text)")
        for command in [["user", "list"], ["apitoken", "create"], ["check"], ["backup", "--to", scratch.appendingPathComponent("b.sqlite").path]] {
            let result = try scorebookd(command, variables)
            XCTAssertEqual(result.status, 0, "\(command): \(result.stderr)")
        }
        sendSignal(process.processIdentifier, SIGTERM)
        XCTAssertTrue(DaemonProcess.waitForExit(process, timeout: DaemonProcess.shutdownTimeout))

        // Without XDG_DATA_HOME, ~/.local/share/scorebookd; it holds no store, and the refusal names it.
        let home = scratch.appendingPathComponent("home").path
        let missing = try scorebookd(["user", "list"], ["HOME": home])
        XCTAssertEqual(missing.status, 1)
        assertOneLine(missing.stderr, "no store at the default")
        XCTAssertTrue(missing.stderr.contains(home + "/.local/share/scorebookd"), missing.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: home), "a command other than serve creates nothing")

        // SCOREBOOK_DATA_DIR beats the default, and --data-dir beats both.
        let fromVariable = try scorebookd(["user", "list", "--json"], ["HOME": home, "SCOREBOOK_DATA_DIR": directory])
        XCTAssertEqual(fromVariable.status, 0, fromVariable.stderr)
        XCTAssertTrue(fromVariable.stdout.contains("\"name\":\"ann\""), fromVariable.stdout)
        let flag = try scorebookd(["user", "list", "--data-dir", scratch.appendingPathComponent("elsewhere").path], ["SCOREBOOK_DATA_DIR": directory])
        XCTAssertEqual(flag.status, 1, "the flag names a directory without a store")
        XCTAssertTrue(flag.stderr.contains("elsewhere"), flag.stderr)
    }

    func testTheDataDirectoryItsFilesAndBackupsAreTheOwnersAlone() throws {
        let directory = scratch.appendingPathComponent("data")
        let daemon = try DaemonProcess.start(dataDirectory: directory)
        _ = try PopulatedStore(daemon, scratch: scratch)
        XCTAssertEqual(try mode(directory.path), 0o700)
        var files = ["scorebook.sqlite", "scorebook.sqlite-wal", "scorebook.sqlite-shm"].map { directory.appendingPathComponent($0).path }
        let assets = directory.appendingPathComponent("assets")
        let stored = FileManager.default.enumerator(atPath: assets.path)?.compactMap { $0 as? String } ?? []
        var assetFiles = 0
        for relative in stored {
            let path = assets.appendingPathComponent(relative).path
            var isDirectory: ObjCBool = false
            XCTAssertTrue(FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory))
            if isDirectory.boolValue {
                XCTAssertEqual(try mode(path), 0o700, relative)
            } else {
                files.append(path)
                assetFiles += 1
            }
        }
        XCTAssertGreaterThan(assetFiles, 0, "the avatar is stored as a file")
        let backup = scratch.appendingPathComponent("backup.sqlite").path
        try administer(daemon, ["backup", "--to", backup])
        files.append(backup)
        for file in files { XCTAssertEqual(try mode(file), 0o600, file) }
        try daemon.stop()
    }

    func testRestorePutsABackupIntoAnEmptyStoreOnly() throws {
        let daemon = try DaemonProcess.start(dataDirectory: scratch.appendingPathComponent("original"))
        let store = try PopulatedStore(daemon, scratch: scratch)
        let backup = scratch.appendingPathComponent("backup.sqlite").path
        try administer(daemon, ["backup", "--to", backup])
        try daemon.stop()

        // Into a directory that does not exist yet: it is made, the store is whole, and its
        // users, books and avatar are served.
        let restored = scratch.appendingPathComponent("restored")
        let result = try DaemonProcess.run("scorebookd", ["restore", "--from", backup, "--data-dir", restored.path])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try JSONValue.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["restored"]?.stringValue, backup)
        XCTAssertEqual(try mode(restored.path), 0o700)
        XCTAssertEqual(try mode(restored.appendingPathComponent("scorebook.sqlite").path), 0o600)
        let copy = try DaemonProcess.start(dataDirectory: restored)
        XCTAssertEqual(try administer(copy, ["check"])["ok"], true)
        let phone = CLIMachine("phone")
        try phone.login(copy, token: store.bobToken)
        XCTAssertEqual(Set(try PopulatedStore.books(phone)), ["ScorebookData", "friday"], "bob's shared book came back")
        let avatar = scratch.appendingPathComponent("restored-ann.jpg").path
        try phone.run("--book", "friday", "person", "avatar", "Ann", "--save", avatar)
        XCTAssertEqual(FileManager.default.contents(atPath: avatar)?.count, 4096, "the asset came back with its bytes")

        // A store with data is refused, and so is a directory a daemon serves, even an empty one.
        let refusals: [(String, [String])] = [
            ("a store with data", ["--data-dir", daemon.dataDirectory.path]),
            ("a served store", ["--data-dir", restored.path]),
        ]
        for (what, store) in refusals {
            let refused = try DaemonProcess.run("scorebookd", ["restore", "--from", backup] + store)
            XCTAssertEqual(refused.status, 1, what)
            assertOneLine(refused.stderr, what)
        }
        try copy.stop()
        let empty = try DaemonProcess.start(dataDirectory: scratch.appendingPathComponent("empty"))
        let served = try DaemonProcess.run("scorebookd", ["restore", "--from", backup, "--data-dir", empty.dataDirectory.path])
        XCTAssertEqual(served.status, 1)
        XCTAssertTrue(served.stderr.contains("pid \(empty.processIdentifier)"), served.stderr)
        try empty.stop()
        // Once stopped, its empty store takes the backup.
        let intoEmpty = try DaemonProcess.run("scorebookd", ["restore", "--from", backup, "--data-dir", empty.dataDirectory.path])
        XCTAssertEqual(intoEmpty.status, 0, intoEmpty.stderr)
        XCTAssertTrue(try DaemonProcess.run("scorebookd", ["user", "list", "--data-dir", empty.dataDirectory.path]).stdout.contains("alice"))

        // Something that is not a backup, or nothing at all: one line, and nothing made.
        let junk = scratch.appendingPathComponent("junk.sqlite")
        try Data(repeating: 0x41, count: 10_000).write(to: junk)
        for source in [junk.path, scratch.appendingPathComponent("missing.sqlite").path] {
            let target = scratch.appendingPathComponent("never-\(UUID().uuidString)")
            let refused = try DaemonProcess.run("scorebookd", ["restore", "--from", source, "--data-dir", target.path])
            XCTAssertEqual(refused.status, 1, source)
            assertOneLine(refused.stderr, source)
            XCTAssertFalse(FileManager.default.fileExists(atPath: target.path), "nothing was made for \(source)")
        }
    }
}
