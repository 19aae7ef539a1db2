import Foundation
import Scorebook

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The confirmation asked before a deletion that changes history (a finished match's result):
/// what goes is printed first; on a terminal the person answers `[y/N]`, elsewhere `--yes`
/// must have been given. A deletion that changes no finished match goes ahead unasked.
enum DeletionConfirmation {
    /// Deletes the entity `reference` names, after the confirmation it needs.
    static func delete<E: CloudKitCompatible>(_ type: E.Type, reference: String, yes: Bool, global: GlobalOptions) throws {
        let book = try global.openScorebook()
        let preview = try book.deletionPreview(type, reference: reference)
        if preview.needsConfirmation {
            try confirm(preview, yes: yes)
        }
        // By record name: the REF has been resolved once, to what was previewed.
        emit(Output.deleted(try book.delete(type, reference: preview.recordName), json: global.json))
    }

    static func confirm(_ preview: DeletionPreview, yes: Bool) throws {
        if yes { return warn(preview.summary) }
        guard isatty(0) == 1 else {
            throw ScorebookError(.invalidInput, preview.summary + "; add --yes to delete (nothing was deleted)")
        }
        FileHandle.standardError.write(Data((DisplayText.escapingControls(preview.summary) + ". Delete? [y/N] ").utf8))
        let answer = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        guard answer == "y" || answer == "yes" else {
            throw ScorebookError(.invalidInput, "nothing was deleted")
        }
    }
}

/// The same rule for a change that is not a deletion: a finished match's result changing is
/// confirmed on a terminal, or needs --yes elsewhere; any other change goes ahead unasked.
enum ChangeConfirmation {
    static func confirm(_ preview: MatchChangePreview, yes: Bool) throws {
        guard preview.needsConfirmation else { return }
        if yes { return warn(preview.summary) }
        guard isatty(0) == 1 else {
            throw ScorebookError(.invalidInput, preview.summary + "; add --yes to change it (nothing was changed)")
        }
        FileHandle.standardError.write(Data((DisplayText.escapingControls(preview.summary) + ". Change it? [y/N] ").utf8))
        let answer = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        guard answer == "y" || answer == "yes" else {
            throw ScorebookError(.invalidInput, "nothing was changed")
        }
    }
}
