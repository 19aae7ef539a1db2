import ArgumentParser
import Foundation
import Scorebook

/// The options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The local store (a SQLite file); also SCOREBOOK_STORE.", valueName: "path"))
    var store: String?

    @Flag(name: .long, help: "Print machine-readable JSON.")
    var json = false

    @Option(name: .long, help: ArgumentHelp("The book (zone) to work on; default ScorebookData.", valueName: "name"))
    var book: String?

    /// `--store`, else `SCOREBOOK_STORE`, else `~/.local/share/scorebook/scorebook.sqlite`.
    var storePath: String {
        if let store, !store.isEmpty { return (store as NSString).expandingTildeInPath }
        if let fromEnvironment = ProcessInfo.processInfo.environment["SCOREBOOK_STORE"], !fromEnvironment.isEmpty {
            return (fromEnvironment as NSString).expandingTildeInPath
        }
        let home = ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()
        return "\(home)/.local/share/scorebook/scorebook.sqlite"
    }

    func openScorebook() throws -> Scorebook {
        let path = storePath
        try StoreFile.requireScorebookStore(at: path)
        try StoreFile.createPrivately(at: path)
        return try Scorebook.open(storePath: path, bookName: book ?? Scorebook.defaultBookName)
    }

    /// `scorebook --store X person list` puts the global options before the command that
    /// declares them; move them after it, where the parser looks for them.
    static func movingLeadingOptions(_ arguments: [String]) -> [String] {
        var moved: [String] = []
        var index = 0
        while index < arguments.count, arguments[index].hasPrefix("-"), arguments[index] != "--" {
            let argument = arguments[index]
            if argument == "--store" || argument == "--book", index + 1 < arguments.count {
                moved += [argument, arguments[index + 1]]
                index += 2
            } else if argument == "--json" || argument.hasPrefix("--store=") || argument.hasPrefix("--book=") {
                moved.append(argument)
                index += 1
            } else {
                break
            }
        }
        guard !moved.isEmpty else { return arguments }
        var rest = Array(arguments[index...])
        // `scorebook --store X help account`: help reads no store, and its parser takes no options.
        if rest.first == "help" { return rest }
        let terminator = rest.firstIndex(of: "--") ?? rest.endIndex
        rest.insert(contentsOf: moved, at: terminator)
        return rest
    }
}

/// Writes a line to standard output at once, so a reader of a pipe sees it as it happens. Any
/// control character but the newlines between lines is escaped here, the last guard that no
/// text from another machine reaches the terminal raw (`Output` already escapes what it shows).
func emit(_ text: String) {
    FileHandle.standardOutput.write(Data((DisplayText.escapingControls(text, keepingNewlines: true) + "\n").utf8))
}

/// Writes a line to standard error, control characters escaped as by `emit`.
func warn(_ text: String) {
    FileHandle.standardError.write(Data((DisplayText.escapingControls(text, keepingNewlines: true) + "\n").utf8))
}
