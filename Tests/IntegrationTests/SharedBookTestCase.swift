import Foundation
import RecordModel
import XCTest

/// A daemon, users with emails, and alice's book `friday` with a game of Catan (Ada and Bo,
/// one match) shared with bob and accepted by him: the ground of the tests of sync, sharing
/// and watch as a user reads them.
class SharedBookTestCase: XCTestCase {
    var daemon: DaemonProcess!
    var tokens: [String: String] = [:]
    var userRecordNames: [String: String] = [:]

    override func setUpWithError() throws {
        daemon = try DaemonProcess.start()
    }

    override func tearDownWithError() throws {
        try daemon?.stop()
        daemon = nil
    }

    /// A user `name` (email `name@example.com`) logged in on a machine of its own.
    func user(_ name: String) throws -> CLIMachine {
        let info = try daemon.createUserInfo(name, email: "\(name)@example.com")
        tokens[name] = info.token
        userRecordNames[name] = info.userRecordName
        let machine = CLIMachine(name)
        try machine.login(daemon, token: info.token)
        return machine
    }

    /// Alice's `friday`: Catan, Ada and Bo, one match, synced and shared with bob, who accepts
    /// and syncs. Returns the match's record name.
    func shareFriday(from alice: CLIMachine, to bob: CLIMachine) throws -> String {
        try alice.run("book", "create", "friday")
        try alice.run("--book", "friday", "person", "add", "Ada")
        try alice.run("--book", "friday", "person", "add", "Bo")
        try alice.run("--book", "friday", "game", "add", "Catan")
        let match = try alice.create("--book", "friday", "match", "start", "--game", "Catan", "--players", "Ada,Bo")
        try alice.sync()
        try alice.run("book", "share", "friday", "--with", "bob@example.com")
        try bob.run("book", "accept", "friday")
        try bob.sync()
        return match
    }

    /// Waits (at most `seconds`) until `condition` holds; returns whether it did.
    @discardableResult
    func eventually(_ seconds: TimeInterval = 20, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return condition()
    }
}
