import ArgumentParser
import RecordModel
import Scorebook

/// `scorebook persn` → `did you mean 'person'?`: an unknown subcommand, at any level of the
/// command tree, is named with the nearest known one before the parser sees it.
enum CommandSuggestion {
    /// The one-line error for the first unknown subcommand in `arguments`, or nil when every
    /// word naming a subcommand is known.
    static func problem(in arguments: [String], root: ParsableCommand.Type = ScorebookCommand.self) -> String? {
        var command = root
        var path = [root.configuration.commandName ?? "scorebook"]
        for word in arguments {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty, !word.hasPrefix("-"), word != "help" else { return nil }
            let names = subcommands.map { $0.configuration.commandName ?? "" }
            if let index = names.firstIndex(of: word) {
                command = subcommands[index]
                path.append(word)
                continue
            }
            let hint = NearestName.nearest(to: word, among: names).map { "did you mean '\($0)'?" }
                ?? "see '\(ShellCommand.line(path + ["--help"]))'"
            return "unknown command '\(word)' for '\(path.joined(separator: " "))'; \(hint)"
        }
        return nil
    }
}
