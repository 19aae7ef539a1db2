/// Commands the CLI prints for a person to run (hints such as "change it with …"), quoted so
/// that pasting them into a POSIX shell runs exactly that command: a record name such as
/// `Score|~|9B1D…` unquoted would start a pipeline.
///
/// ```swift
/// ShellCommand.line(["scorebook", "score", "edit", "Score|~|9B1D", "7"])
/// // scorebook score edit 'Score|~|9B1D' 7
/// ```
public enum ShellCommand {
    /// The words joined by spaces, each quoted as `ShellCommand.quoted` does.
    public static func line(_ words: [String]) -> String {
        words.map(quoted).joined(separator: " ")
    }

    /// A word as a POSIX shell reads it back: unchanged when it holds only characters no shell
    /// treats specially, otherwise in single quotes (a single quote inside written `'\''`).
    public static func quoted(_ word: String) -> String {
        if !word.isEmpty, word.unicodeScalars.allSatisfy(isPlain) { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// Letters, digits and `_ - . , / : @ % + =`: never special to a POSIX shell (`=` only
    /// in a leading assignment, which a command's arguments are not).
    static func isPlain(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "_", "-", ".", ",", "/", ":", "@", "%", "+", "=": return true
        default: return false
        }
    }
}
