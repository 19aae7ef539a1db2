import Foundation
import RecordModel
import XCTest

/// The console signs in with a password through the daemon's sign-in page, in headless Chromium:
/// in a popup that posts the token back, and in the same window, which comes back to the console.
final class ConsoleSignInBrowserTests: XCTestCase {
    var daemon: DaemonProcess?
    var browser: WebDriver?

    override func tearDownWithError() throws {
        browser?.quit()
        try daemon?.stop()
    }

    /// A daemon, alice with a password, and a browser on the console (`alice`: her name, as the console shows her).
    func start() throws -> (daemon: DaemonProcess, alice: String, page: WebDriver, own: String) {
        try WebDriver.requireBrowser()
        let started = try DaemonProcess.start()
        daemon = started
        let alice = try started.createUserInfo("alice")
        XCTAssertEqual(try started.setPassword("alice", input: "alice's console password\n").status, 0)
        let page = try WebDriver.start()
        browser = page
        let own = started.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        XCTAssertFalse(alice.userRecordName.isEmpty)
        return (started, "alice", page, own)
    }

    func fillSignInForm(_ page: WebDriver) throws {
        try page.wait(for: "the sign-in page's form", timeout: 15, "return document.querySelector('input[name=password]') !== null")
        try page.type("alice", into: "input[name=name]")
        try page.type("alice's console password", into: "input[name=password]")
        try page.click("button[type=submit]")
    }

    func waitUntilSignedIn(_ page: WebDriver, as name: String) throws {
        let shown = try page.wait(for: "the console signed in", timeout: 20,
                                  "return document.getElementById('signin').hidden && document.getElementById('user').textContent")
        XCTAssertEqual(shown.stringValue, name)
        let kept = try page.execute("return sessionStorage.getItem('scorebook.console.token')").stringValue ?? ""
        XCTAssertEqual(kept.count, 64, "a new token, kept for the tab")
    }

    func testSignInWithAPasswordInAPopup() throws {
        let (_, alice, page, own) = try start()
        try page.navigate(to: "\(own)/console")
        let console = try page.command("GET", "/window")
        try page.wait(for: "the console's sign-in", "return !document.getElementById('signin').hidden")
        try page.click("#signin-password")
        try page.signInThroughPopup(openedFrom: console, name: "alice", password: "alice's console password")
        try waitUntilSignedIn(page, as: alice)
        XCTAssertEqual((try page.command("GET", "/window/handles").arrayValue ?? []).count, 1, "the popup closed itself")
    }

    func testSignInWithAPasswordInTheSameWindowReturnsToTheConsole() throws {
        let (_, alice, page, own) = try start()
        let origin = own.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        try page.navigate(to: "\(own)/signin?container=iCloud.scorebook&origin=\(origin)")
        try fillSignInForm(page)
        try waitUntilSignedIn(page, as: alice)
        XCTAssertEqual(try page.execute("return window.location.href").stringValue, "\(own)/console", "the token left the address")
    }
}
