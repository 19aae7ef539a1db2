import ArgumentParser
import Dispatch
import Foundation
import Scorebook
import SyncEngine

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Send local changes and fetch remote ones; --watch keeps applying remote changes.",
        subcommands: [Enable.self, Disable.self])

    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "After syncing, apply remote changes as they are announced, in every book (--book is not needed).") var watch = false
    @Option(name: .customLong("for"), help: ArgumentHelp("Stop watching after this many seconds.", valueName: "seconds"))
    var seconds: Double?

    func validate() throws {
        if seconds != nil && !watch { throw ValidationError("--for goes with --watch") }
        if let seconds, !(seconds >= 0) { throw ValidationError("--for takes a number of seconds, 0 or more") }
    }

    func run() async throws {
        let book = try global.openScorebook()
        let json = global.json
        // On standard error, so --json output stays clean; only for a sync that takes a while.
        let progress = ProgressDisplay.start()
        defer { progress?.stop() }
        let phases = SyncPhaseReport()
        let onProgress: ((SyncProgress) -> Void)? = progress == nil && !phases.isActive ? nil : { counts in
            progress?.update(counts)
            phases.update(counts)
        }
        guard watch else {
            SyncInterruption.reportWhatIsLeft(storePath: global.storePath, progress: progress)
            let report = try await book.syncAndReport(onProgress: onProgress)
            progress?.stop()
            phases.finish()
            emit(Output.syncReport(report, names: { $0.flatMap(book.shortName) }, json: json))
            return
        }
        let tally = WatchTally()
        SyncInterruption.summarizeWatch(tally, json: json, progress: progress)
        func printing(_ body: () -> Void) {
            if let progress { progress.interrupt(body) } else { body() }
        }
        func show(_ change: AppliedChange, _ line: String, _ bookName: String?) {
            let writer = book.otherWriterID(of: change)
            printing {
                emit(Output.change(change, line: line, by: writer.flatMap(book.shortName), writerID: writer, book: bookName, json: json))
            }
        }
        // A text line by a writer this store cannot name yet waits for the end of its sync, when
        // the watch has looked the writer up (those after it wait too, to keep the order).
        var waiting: [(change: AppliedChange, line: String, book: String?)] = []
        func showWaiting() {
            for entry in waiting { show(entry.change, entry.line, entry.book) }
            waiting = []
        }
        let stopped = try await book.watch(seconds: seconds, onStart: { books, user in
            // JSON lines stay one object per change.
            if !json { printing { emit(Output.watchStart(books: books, user: user)) } }
        }, onChange: { bookName, change, line in
            tally.count(saved: change.kind == .saved)
            // Lines name their book once the store has more than one (it may grow during the watch).
            let named = book.hasSeveralBooks() ? bookName : nil
            let unnamed = book.otherWriterID(of: change).map { (try? book.userName($0)) == nil } ?? false
            if !json, unnamed || !waiting.isEmpty {
                waiting.append((change, line, named))
            } else {
                show(change, line, named)
            }
        }, onProblem: { problem in printing { warn("warning: \(problem)") } },
           onInvitation: { line in printing { json ? warn(line) : emit(line) } },
           onConnectionRestored: { printing { warn("connected to the server again") } },
           onBookJoined: { line in if !json { printing { emit(line) } } },
           onSynced: showWaiting,
           onInitialSyncProgress: onProgress)
        showWaiting()
        // Another process logged out, logged in or turned sync off: one line, and status 0.
        if let stopped {
            printing { warn(stopped.description) }
        } else if let seconds, !json {
            let (saved, deleted) = tally.counts
            printing { emit(Output.watchSummary(seconds: seconds, saved: saved, deleted: deleted)) }
        }
    }

    struct Enable: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "enable", abstract: "Turn sync on.")
        @OptionGroup var global: GlobalOptions

        func run() throws {
            try global.openScorebook().setSyncEnabled(true)
            emit(global.json ? "{\"syncEnabled\":true}" : "sync is on")
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "disable", abstract: "Turn sync off; edits keep queueing locally.")
        @OptionGroup var global: GlobalOptions

        func run() throws {
            try global.openScorebook().setSyncEnabled(false)
            emit(global.json ? "{\"syncEnabled\":false}" : "sync is off")
        }
    }
}

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Account, sync on/off, last sync, pending changes, last error.")
    @OptionGroup var global: GlobalOptions

    func run() throws {
        let book = try global.openScorebook()
        let status = try book.status()
        emit(Output.status(status, label: (status.account?.userRecordName ?? status.dataOwner).flatMap(book.personLabel), json: global.json))
    }
}
