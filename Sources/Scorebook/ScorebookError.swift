/// A command that cannot be carried out, with the exit status the CLI reports it with.
public struct ScorebookError: Error, CustomStringConvertible, Equatable {
    public enum Kind: Sendable, Equatable {
        /// A REF that names nothing, or more than one thing (exit 2).
        case badReference
        /// Input that makes no sense (exit 1).
        case invalidInput
        /// Sync or account trouble (exit 1).
        case sync
    }

    public var kind: Kind
    public var description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// The process exit status for this error.
    public var exitCode: Int32 { kind == .badReference ? 2 : 1 }
}
