/// The rule for names typed into the scorebook: 1–200 characters, none of them a
/// control character. Every command that sets a name — a person's first or last name, a game's
/// name, a location's name — checks it here, so the rule and its messages are one.
///
/// ```swift
/// let name = try NameValidation.validated("  Catan ", field: "a game's name")   // "Catan"
/// try NameValidation.validated("Ann\u{1B}[2J", field: "a first name")          // throws
/// ```
public enum NameValidation {
    /// The most characters (grapheme clusters, what a reader counts) a name may have.
    public static let maximumLength = 200

    /// `text` without surrounding spaces, or an `.invalidInput` error naming `field` when it is
    /// empty, longer than `maximumLength`, or holds a control character (C0, DEL, C1) or a line
    /// or paragraph separator.
    public static func validated(_ text: String, field: String) throws -> String {
        let name = text.trimmingSpaces()
        if let scalar = name.unicodeScalars.first(where: isForbidden) {
            let code = String(scalar.value, radix: 16, uppercase: true)
            throw ScorebookError(.invalidInput, "\(field) must not contain control characters "
                + "(found U+\(String(repeating: "0", count: max(0, 4 - code.count)))\(code))")
        }
        guard !name.isEmpty else { throw ScorebookError(.invalidInput, "\(field) must not be empty") }
        let length = name.count
        guard length <= maximumLength else {
            throw ScorebookError(.invalidInput, "\(field) is \(length) characters long; the most is \(maximumLength)")
        }
        return name
    }

    /// For a name that may be left out: nil for nil or blank text, else `validated`.
    public static func validatedOptional(_ text: String?, field: String) throws -> String? {
        guard let text, !text.trimmingSpaces().isEmpty else { return nil }
        return try validated(text, field: field)
    }

    static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        DisplayText.isControl(scalar) || scalar == "\u{2028}" || scalar == "\u{2029}"
    }
}

extension String {
    /// Without leading and trailing spaces (space separators: U+0020, no-break and ideographic
    /// spaces; a tab or a newline is a control character, refused rather than silently dropped).
    func trimmingSpaces() -> String {
        func isSpace(_ character: Character?) -> Bool {
            character?.unicodeScalars.allSatisfy { $0.properties.generalCategory == .spaceSeparator } ?? false
        }
        var slice = self[...]
        while isSpace(slice.first) { slice = slice.dropFirst() }
        while isSpace(slice.last) { slice = slice.dropLast() }
        return String(slice)
    }
}
