import Foundation
import NotesKit
import RecordSync

// notes: a tiny front end of the notes store.
//
//   notes [--store FILE] login SERVER TOKEN      log the store in to a scorebookd account
//   notes [--store FILE] folder NAME             make a folder
//   notes [--store FILE] add FOLDER TEXT         write a note in a folder (named by its name)
//   notes [--store FILE] list                    every folder and its notes
//   notes [--store FILE] delete NAME             delete a folder (with its notes) or a note (by record name)
//   notes [--store FILE] sync                    send and fetch
//   notes [--store FILE] watch [SECONDS]         apply other machines' changes as they come

struct Usage: Error, CustomStringConvertible {
    let description: String
}

func run(_ arguments: [String]) async throws {
    var arguments = arguments
    var path = "notes.sqlite"
    if arguments.first == "--store", arguments.count > 1 {
        path = arguments[1]
        arguments.removeFirst(2)
    }
    let store = try NotesStore.open(path: path)
    switch (arguments.first, arguments.count) {
    case ("login", 3):
        guard let server = URL(string: arguments[1]) else { throw Usage(description: "\(arguments[1]) is not a URL") }
        let account = try await store.logIn(server: server, token: arguments[2])
        print("logged in as \(account.userRecordName)")
    case ("folder", 2):
        try store.save(Folder(name: arguments[1]))
    case ("add", 3):
        guard let folder = try store.all(Folder.self).first(where: { $0.name == arguments[1] }) else {
            throw Usage(description: "no folder is named \(arguments[1])")
        }
        let note = Note(folder: folder, text: arguments[2])
        try store.save(note)
        print(note.recordName)
    case ("list", 1):
        for folder in try store.all(Folder.self).sorted(by: { $0.name < $1.name }) {
            print(folder.name)
            for note in try store.entities(Note.self, referencing: folder.recordName) {
                print("  \(note.text)\(note.pinned ? " (pinned)" : "")  \(note.recordName)")
            }
        }
    case ("delete", 2):
        let folder = try store.all(Folder.self).first { $0.name == arguments[1] }
        let deleted = try store.delete(recordNamed: folder?.recordName ?? arguments[1])
        print("deleted \(deleted.count) record(s)")
    case ("sync", 1):
        let summary = try await store.sync()
        print("sent \(summary.sentSaved + summary.sentDeleted), received \(summary.receivedSaved + summary.receivedDeleted)")
    case ("watch", 1), ("watch", 2):
        let seconds = arguments.count == 2 ? Double(arguments[1]) : nil
        let events = store.events()
        let printer = Task {
            for await event in events {
                switch event {
                case .changed(let change): print("changed \(change.recordType) \(change.recordName)")
                case .deleted(let deletion): print("deleted \(deletion.recordType) \(deletion.recordName)")
                case .conflictResolved(let conflict): print("conflict on \(conflict.recordName).\(conflict.field) settled")
                case .problem(let problem): print("problem: \(problem)")
                default: break
                }
            }
        }
        try await store.watch(until: seconds.map { Date().addingTimeInterval($0) })
        printer.cancel()
    default:
        throw Usage(description: "usage: notes [--store FILE] login SERVER TOKEN | folder NAME | add FOLDER TEXT | list | delete NAME | sync | watch [SECONDS]")
    }
}

do {
    try await run(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("notes: \(error)\n".utf8))
    exit(1)
}
