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
        let onProgress = progress.map { display in { (counts: SyncProgress) in display.update(counts) } }
        guard watch else {
            let summary = try await book.sync(onProgress: onProgress)
            progress?.stop()
            emit(Output.syncSummary(summary, json: json))
            return
        }
        Self.exitQuietlyOnSignals()
        func printing(_ body: () -> Void) {
            if let progress { progress.interrupt(body) } else { body() }
        }
        let stopped = try await book.watch(seconds: seconds, onChange: { bookName, change in
            // Lines name their book once the store has more than one (it may grow during the watch);
            // with one book they stay as CONTRACT §4.2 shows them.
            let named = book.hasSeveralBooks() ? bookName : nil
            printing { emit(Output.change(change, by: book.otherWriter(of: change), book: named, json: json)) }
        },
                                           onProblem: { problem in printing { warn("warning: \(problem)") } },
                                           onInitialSyncProgress: onProgress)
        // Another process logged out, logged in or turned sync off: one line, and status 0.
        if let stopped { printing { warn(stopped.description) } }
    }

    /// Ctrl-C or SIGTERM ends a watch with status 0: every change applied so far is committed.
    static func exitQuietlyOnSignals() {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { Foundation.exit(0) }
            source.resume()
            signalSources.append(source)
        }
    }

    nonisolated(unsafe) static var signalSources: [any DispatchSourceSignal] = []

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
        emit(Output.status(try global.openScorebook().status(), json: global.json))
    }
}
