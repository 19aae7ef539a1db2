/// POSIX shell quoting of the commands the CLI prints for a person to paste.
public enum ShellQuoting {
    /// One word as a POSIX shell reads it back unchanged: as is when it holds only safe
    /// characters, else in single quotes (a single quote inside written as `'\''`).
    public static func quote(_ word: String) -> String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,")
        if !word.isEmpty, word.allSatisfy(safe.contains) { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// A command line: each word quoted, separated by spaces.
    public static func command(_ words: [String]) -> String {
        words.map(quote).joined(separator: " ")
    }
}
