import Foundation
import NotesKit
import RecordSync
import Synchronization
import XCTest

/// Two machines (two local stores) of one account, synced through a real scorebookd: the
/// binary `$SCOREBOOKD` names (scripts/test.sh sets it to the main package's
/// `.build/debug/scorebookd`).
final class TwoMachineTests: XCTestCase {
    var daemon: Daemon!
    var laptop: SyncStore!
    var desktop: SyncStore!
    var directory: URL!

    override func setUp() async throws {
        guard let binary = ProcessInfo.processInfo.environment["SCOREBOOKD"], !binary.isEmpty else {
            throw XCTSkip("SCOREBOOKD is not set: build the main package and set it to its .build/debug/scorebookd "
                + "(scripts/test.sh does) to run the two-machine test")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("notes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        daemon = try Daemon.start(binary: binary, dataDirectory: directory.appendingPathComponent("server").path)
        let token = try daemon.createUser("ada")
        laptop = try NotesStore.open(path: directory.appendingPathComponent("laptop.sqlite").path)
        desktop = try NotesStore.open(path: directory.appendingPathComponent("desktop.sqlite").path)
        try await laptop.logIn(server: daemon.url, token: token)
        try await desktop.logIn(server: daemon.url, token: token)
        // The app's file holds the app's zone alone: nothing of the CLI's books.
        XCTAssertEqual(try laptop.zones().map(\.zone), [NotesStore.zone])
    }

    override func tearDown() {
        daemon?.stop()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// What a store reports while `body` runs.
    func events(of store: SyncStore, during body: () async throws -> Void) async throws -> [SyncEvent] {
        let stream = store.events()
        let collected = Mutex<[SyncEvent]>([])
        let collector = Task {
            for await event in stream { collected.withLock { $0.append(event) } }
        }
        try await body()
        // Events are yielded before the call returns; let the collector drain them.
        try await Task.sleep(for: .milliseconds(100))
        collector.cancel()
        return collected.withLock { $0 }
    }

    func testNotesReachTheOtherMachineAndADeletionArrivesAsAnEvent() async throws {
        let inbox = Folder(name: "Inbox")
        let milk = Note(folder: inbox, text: "Buy milk")
        let eggs = Note(folder: inbox, text: "Buy eggs")
        try laptop.save([inbox, milk, eggs])
        try await laptop.sync()

        let arrivals = try await events(of: desktop) { try await desktop.sync() }
        let changed = arrivals.compactMap { event -> ChangedEntity? in
            if case .changed(let change) = event { return change }
            return nil
        }
        XCTAssertEqual(Set(changed.compactMap { $0.entity(as: Note.self)?.text }), ["Buy milk", "Buy eggs"])
        // Records carry dates in milliseconds: compare what the folder says, not its Date.
        XCTAssertEqual(changed.compactMap { $0.entity(as: Folder.self) }.map(\.name), [inbox.name])
        XCTAssertEqual(try desktop.entities(Note.self, referencing: inbox.recordName).count, 2)

        try laptop.delete(eggs)
        try await laptop.sync()
        let deletions = try await events(of: desktop) { try await desktop.sync() }.compactMap { event -> DeletedEntity? in
            if case .deleted(let deletion) = event { return deletion }
            return nil
        }
        XCTAssertEqual(deletions.map(\.recordName), [eggs.recordName])
        XCTAssertTrue(deletions[0].is(Note.self), "the type comes from the bare record name")
        XCTAssertNil(try desktop.entity(Note.self, named: eggs.recordName))
    }

    func testOfflineEditsOnBothMachinesMerge() async throws {
        let inbox = Folder(name: "Inbox")
        var milk = Note(folder: inbox, text: "Buy milk")
        try laptop.save([inbox, milk])
        try await laptop.sync()
        try await desktop.sync()

        // Offline on both: the laptop pins the note, the desktop rewrites its text; and both
        // rename the folder, the desktop later (its name wins).
        milk.pinned = true
        milk.modificationDate = Date()
        try laptop.save(milk)
        var laptopInbox = inbox
        laptopInbox.name = "Errands"
        laptopInbox.modificationDate = Date()
        try laptop.save(laptopInbox)
        var desktopMilk = try XCTUnwrap(desktop.entity(Note.self, named: milk.recordName))
        desktopMilk.text = "Buy oat milk"
        desktopMilk.modificationDate = Date().addingTimeInterval(1)
        try desktop.save(desktopMilk)
        var desktopInbox = try XCTUnwrap(desktop.entity(Folder.self, named: inbox.recordName))
        desktopInbox.name = "Shopping"
        desktopInbox.modificationDate = Date().addingTimeInterval(1)
        try desktop.save(desktopInbox)

        try await laptop.sync()
        let desktopEvents = try await events(of: desktop) { try await desktop.sync() }
        try await laptop.sync()

        for store in [laptop!, desktop!] {
            let note = try XCTUnwrap(store.entity(Note.self, named: milk.recordName))
            XCTAssertEqual(note.text, "Buy oat milk")
            XCTAssertTrue(note.pinned)
            XCTAssertEqual(try store.entity(Folder.self, named: inbox.recordName)?.name, "Shopping")
            XCTAssertEqual(try store.pendingChangeCount(), 0)
        }
        let conflicts = desktopEvents.compactMap { event -> ConflictDetail? in
            if case .conflictResolved(let conflict) = event { return conflict }
            return nil
        }
        XCTAssertEqual(conflicts.map(\.field), ["name"], "the folder's name was edited on both; what was kept is told")
        XCTAssertEqual(conflicts.first?.kept, .string("Shopping"))
    }

    func testDeletingAFolderRemovesItsNotesEverywhere() async throws {
        let inbox = Folder(name: "Inbox")
        let work = Folder(name: "Work")
        try laptop.save([inbox, work, Note(folder: inbox, text: "Buy milk"), Note(folder: inbox, text: "Call Bob"),
                         Note(folder: work, text: "Ship it")])
        try await laptop.sync()
        try await desktop.sync()
        XCTAssertEqual(try desktop.all(Note.self).count, 3)

        let deleted = try desktop.delete(inbox)
        XCTAssertEqual(deleted.count, 3, "the folder and its two notes, here at once")
        XCTAssertEqual(try desktop.all(Note.self).map(\.text), ["Ship it"])
        try await desktop.sync()

        let deletions = try await events(of: laptop) { try await laptop.sync() }.compactMap { event -> DeletedEntity? in
            if case .deleted(let deletion) = event { return deletion }
            return nil
        }
        XCTAssertEqual(Set(deletions.map(\.recordType)), ["Folder", "Note"])
        XCTAssertEqual(try laptop.all(Folder.self).map(\.name), ["Work"])
        XCTAssertEqual(try laptop.all(Note.self).map(\.text), ["Ship it"])
    }

    func testASharedZoneReachesTheInviteeBothWaysUntilTheyLeave() async throws {
        let inbox = Folder(name: "Inbox")
        try laptop.save([inbox, Note(folder: inbox, text: "Buy milk")])
        try await laptop.sync()
        try await laptop.share(with: "bob@example.com")

        let bob = try NotesStore.open(path: directory.appendingPathComponent("bob.sqlite").path)
        try await bob.logIn(server: daemon.url, token: daemon.createUser("bob"))
        let invitations = try await bob.invitations()
        let invitation = try XCTUnwrap(invitations.first)
        XCTAssertEqual(invitation.zone, NotesStore.zone)
        let shared = try await bob.accept(invitation.url ?? invitation.shortGUID)
        try await bob.sync()
        XCTAssertEqual(try shared.all(Note.self).map(\.text), ["Buy milk"])

        try shared.save(Note(folder: inbox, text: "Call Ada"))
        try await bob.sync()
        try await laptop.sync()
        XCTAssertEqual(Set(try laptop.all(Note.self).map(\.text)), ["Buy milk", "Call Ada"])

        try await shared.leave()
        XCTAssertFalse(try bob.zones().contains { $0.owner != nil })
    }

    func testAWatchingMachineHearsOfAnEditAsItIsPushed() async throws {
        let desktop = try XCTUnwrap(self.desktop)
        try await desktop.sync()
        let events = desktop.events()
        let watch = Task { try await desktop.watch(until: Date().addingTimeInterval(30)) }
        let inbox = Folder(name: "Inbox")
        try laptop.save(inbox)
        // The watch's first sync may run before or after this one: either way the folder arrives.
        try await Task.sleep(for: .milliseconds(500))
        try await laptop.sync()
        let waiter = Task { () -> Bool in
            for await event in events {
                if case .changed(let change) = event, change.recordName == inbox.recordName { return true }
            }
            return false
        }
        // A stream ends its iteration when its task is cancelled: the test never waits past this.
        let timeout = Task {
            try await Task.sleep(for: .seconds(20))
            waiter.cancel()
        }
        let arrived = await waiter.value
        timeout.cancel()
        watch.cancel()
        _ = await watch.result
        XCTAssertTrue(arrived)
        XCTAssertEqual(try desktop.entity(Folder.self, named: inbox.recordName)?.name, inbox.name)
    }
}
