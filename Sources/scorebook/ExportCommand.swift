import ArgumentParser
import Foundation
import Scorebook

// Retroactive: Scorebook (the CLI's logic) compiles without package access to this target, so
// the compiler counts it as another package's type; both are the CLI's own.
extension ExportFormat: @retroactive ExpressibleByArgument {}

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Write the whole book (people, games, matches, players, scores, locations) as JSON or CSV.")
    @OptionGroup var global: GlobalOptions
    @Option(name: .long, help: ArgumentHelp("json or csv (default: csv for a --to FILE ending in .csv, else json).", valueName: "format"))
    var format: ExportFormat?
    @Option(name: .long, help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file")) var to: String?

    func run() throws {
        let chosen = format ?? (to.map { $0.lowercased().hasSuffix(".csv") } == true ? .csv : .json)
        let book = try global.openScorebook().export()
        let text = chosen == .csv ? book.csvText : book.jsonText
        guard let to else {
            FileHandle.standardOutput.write(Data(text.utf8))
            return
        }
        let path = (to as NSString).expandingTildeInPath
        do {
            // Atomic: an interrupted export never leaves half a file where a good one was.
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw ScorebookError(.invalidInput, "cannot write \(path): \((error as NSError).localizedDescription)")
        }
        emit("exported \(book.rows.count) record\(book.rows.count == 1 ? "" : "s") to \(path)")
    }
}

struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Read an export (JSON or CSV) into the book, keeping record names; importing a file twice changes nothing.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("A file written by `scorebook export`.", valueName: "file")) var file: String

    func run() throws {
        let summary = try global.openScorebook().importBook(from: (file as NSString).expandingTildeInPath)
        emit(summary.rendered(json: global.json))
    }
}
