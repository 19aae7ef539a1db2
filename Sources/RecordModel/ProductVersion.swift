/// The release both programs report with `--version` (`scorebook 0.9.0`, `scorebookd 0.9.0`);
/// one constant, so the client and the daemon of one build never disagree.
public enum ProductVersion {
    public static let current = "0.9.0"
}
