import Foundation

/// Where `account login` takes the token from: exactly one of `--token`,
/// `--token-file` and the environment variable `SCOREBOOK_TOKEN`. Two sources are refused
/// rather than ranked, so a forgotten exported variable never logs in as someone unexpected.
public enum TokenSource {
    /// The token, or an `.invalidInput` error saying what is wrong. `environment` is the value of
    /// `SCOREBOOK_TOKEN` (an empty value counts as unset); a file's surrounding whitespace and
    /// final newline are dropped.
    public static func token(flag: String?, file: String?, environment: String?) throws -> String {
        let environment = environment.flatMap { $0.isEmpty ? nil : $0 }
        let given = [flag.map { _ in "--token" }, file.map { _ in "--token-file" }, environment.map { _ in "SCOREBOOK_TOKEN" }]
            .compactMap { $0 }
        guard given.count == 1 else {
            if given.isEmpty { throw ScorebookError(.invalidInput, "give the token with --token, --token-file FILE or SCOREBOOK_TOKEN") }
            throw ScorebookError(.invalidInput,
                                 "the token comes from exactly one of --token, --token-file and SCOREBOOK_TOKEN; got \(given.joined(separator: " and "))")
        }
        if let flag { return try checked(flag, from: "--token") }
        if let environment { return try checked(environment, from: "SCOREBOOK_TOKEN") }
        let path = file ?? ""
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ScorebookError(.invalidInput, "cannot read --token-file \(path): \(Self.reason(error))")
        }
        guard data.count <= 64 * 1024, let text = String(data: data, encoding: .utf8) else {
            throw ScorebookError(.invalidInput, "--token-file \(path) does not hold a token (expected one line of text)")
        }
        return try checked(text.trimmingCharacters(in: .whitespacesAndNewlines), from: "--token-file \(path)")
    }

    /// A token is one non-empty word of printable characters.
    private static func checked(_ token: String, from source: String) throws -> String {
        guard !token.isEmpty else { throw ScorebookError(.invalidInput, "\(source) is empty") }
        guard !token.unicodeScalars.contains(where: { $0.properties.isWhitespace || DisplayText.isControl($0) }) else {
            throw ScorebookError(.invalidInput, "\(source) holds spaces, line breaks or control characters; a token is one word")
        }
        return token
    }

    private static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain,
            let message = strerror(Int32(underlying.code))
        {
            return String(cString: message)
        }
        if nsError.domain == NSCocoaErrorDomain {
            switch nsError.code {
            case NSFileReadNoSuchFileError: return "no such file"
            case NSFileReadNoPermissionError: return "permission denied"
            default: break
            }
        }
        return nsError.localizedDescription
    }
}
