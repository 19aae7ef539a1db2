import ArgumentParser
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
            let hint = nearest(to: word, among: names).map { "did you mean '\($0)'?" }
                ?? "see '\(ShellCommand.line(path + ["--help"]))'"
            return "unknown command '\(word)' for '\(path.joined(separator: " "))'; \(hint)"
        }
        return nil
    }

    /// The name closest to `word` by edit distance, if close enough to be a typo of it.
    static func nearest(to word: String, among names: [String]) -> String? {
        let scored = names.map { (name: $0, distance: distance(word.lowercased(), $0)) }
        guard let best = scored.min(by: { $0.distance < $1.distance }) else { return nil }
        let prefixed = names.filter { $0.hasPrefix(word.lowercased()) }
        if prefixed.count == 1 { return prefixed[0] }
        return best.distance <= max(2, best.name.count / 3) ? best.name : nil
    }

    /// Levenshtein distance.
    static func distance(_ left: String, _ right: String) -> Int {
        let a = Array(left), b = Array(right)
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
