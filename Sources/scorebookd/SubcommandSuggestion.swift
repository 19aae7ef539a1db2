import ArgumentParser
import RecordModel

/// `scorebookd user lst` → `did you mean 'list'?`: an unknown subcommand at any level is named
/// with the nearest known one before the parser sees it (the parser would only say "unexpected argument").
enum SubcommandSuggestion {
    static func problem(in arguments: [String], root: ParsableCommand.Type) -> String? {
        var command = root
        var path = [root.configuration.commandName ?? "scorebookd"]
        for word in arguments {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty, !word.hasPrefix("-"), word != "help" else { return nil }
            let names = subcommands.map { $0._commandName }
            if let index = names.firstIndex(of: word) {
                command = subcommands[index]
                path.append(word)
                continue
            }
            let hint = NearestName.nearest(to: word, among: names).map { "did you mean '\($0)'?" }
                ?? "see '\((path + ["--help"]).joined(separator: " "))'"
            return "unknown command '\(word)' for '\(path.joined(separator: " "))'; \(hint)"
        }
        return nil
    }
}
