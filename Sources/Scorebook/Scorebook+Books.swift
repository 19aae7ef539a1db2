import Foundation
import SyncEngine

/// Books: one zone each, several in one store file.
extension Scorebook {
    /// The name of the default book.
    public static let defaultBookName = LocalBook.defaultBook.zoneName

    /// Opens the book `name` of the store at `storePath`: the default book always, any other
    /// only once it exists here (made by `book create` or fetched by `sync`).
    public static func open(storePath: String, bookName: String) throws -> Scorebook {
        let defaultBook = try Scorebook(storePath: storePath)
        guard bookName != defaultBookName else { return defaultBook }
        // NAME@OWNER: a zone name never holds '@', so the first one splits.
        let parts = bookName.split(separator: "@", maxSplits: 1).map(String.init)
        let name = parts.first ?? bookName
        let owner = parts.count == 2 ? parts[1] : nil
        let known = try defaultBook.store.books().filter { !$0.pendingDelete }
        // The owner by user record name, or by the email or name this store knows them by.
        let owners = owner.map { [$0] + defaultBook.userRecordNames(named: $0) } ?? []
        let candidates = known.filter { summary in
            (summary.book.zoneName == name || summary.title == name)
                && (owner == nil || owners.contains(summary.book.ownerRecordName) || (owner == "me" && summary.book.scope == .private))
        }
        // Among one's own books the zone name wins over a title; books of different owners
        // sharing a name are never picked silently.
        let owned = candidates.filter { $0.book.scope == .private && $0.book.zoneName == name }
        let chosen = candidates.count == 1 ? candidates[0]
            : (candidates.allSatisfy { $0.book.scope == .private } && owned.count == 1 ? owned[0] : nil)
        guard let chosen else {
            if candidates.count > 1 {
                let listed = candidates.map { defaultBook.qualifiedName(of: $0) }.joined(separator: ", ")
                throw ScorebookError(.badReference, "\"\(bookName)\" names \(candidates.count) books: \(listed); "
                    + "name one as NAME@OWNER (see 'scorebook book list')")
            }
            // Only a name `book create` takes is worth suggesting; a title with spaces is refused there.
            let create = (try? validateBookName(name)) != nil ? " or run '\(ShellCommand.line(["scorebook", "book", "create", name]))'" : ""
            throw ScorebookError(.invalidInput, "no book named \"\(bookName)\"; see 'scorebook book list'\(create)")
        }
        return try Scorebook(store: defaultBook.store.opening(chosen.book))
    }

    /// A book as NAME@OWNER: `friday@me` for one's own, `friday@alice` for alice's.
    func qualifiedName(of summary: LocalBookSummary) -> String {
        let owner = summary.book.scope == .private ? "me" : shortName(summary.book.ownerRecordName)
        return "\(summary.title ?? summary.book.zoneName)@\(owner)"
    }

    /// The books shared with the user whose name or title is `name`, as NAME@OWNER.
    public func sharedBooks(named name: String) throws -> [String] {
        try books().filter { $0.book.scope == .shared && ($0.book.zoneName == name || $0.title == name) }.map(qualifiedName)
    }

    /// A zone name the server takes: letters, digits, `-`, `_` and `.`, not starting with `_`.
    static func validateBookName(_ name: String) throws {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        guard !name.isEmpty, name.count <= 255, !name.hasPrefix("_"), name.allSatisfy(allowed.contains) else {
            throw ScorebookError(.invalidInput, "a book name is 1 to 255 letters, digits, '-', '_' or '.', not starting with '_'; got \"\(name)\"")
        }
    }

    /// Makes a new book (a zone of the private database, created on the server at the next sync).
    public func createBook(named name: String) throws {
        try Self.validateBookName(name)
        let book = LocalBook(zoneName: name)
        if try store.hasBook(book) {
            // Deleted here but not yet on the server: its old records would come back.
            let deleting = try store.opening(book).isPendingDelete()
            throw ScorebookError(.invalidInput, deleting ? "the book \"\(name)\" is being deleted; run 'scorebook sync' first"
                                                      : "a book named \"\(name)\" exists already")
        }
        _ = try store.opening(book)
    }

    /// The books of this store, the default first.
    public func books() throws -> [LocalBookSummary] {
        try store.books().filter { !$0.pendingDelete }
    }

    /// Deletes a book the user owns, here at once and on the server at the next sync.
    public func deleteBook(named name: String) throws {
        try ownedBookStore(named: name).deleteBookLocally()
    }

    /// The store of the book `name` (a zone name) the user owns, or why it cannot be changed.
    @discardableResult
    func ownedBookStore(named given: String) throws -> LocalRecordStore {
        // `friday@me`, the name an ambiguity error offers for one's own book.
        let name = given.hasSuffix("@me") ? String(given.dropLast(3)) : given
        guard name != Self.defaultBookName else {
            throw ScorebookError(.invalidInput, "the default book \(Self.defaultBookName) cannot be deleted")
        }
        // One's own book by zone name, else by title (as every other book command takes it).
        let owned = try books().filter { $0.book.scope == .private }
        if let titled = owned.first(where: { $0.book.zoneName == name }) ?? owned.first(where: { $0.title == name }) {
            return try store.opening(titled.book)
        }
        if try store.books().contains(where: { $0.book.scope == .shared && ($0.title == name || $0.book.zoneName == name) }) {
            throw ScorebookError(.invalidInput, "only the owner can delete the book \(name); "
                + "'\(ShellCommand.line(["scorebook", "book", "leave", name]))' leaves it")
        }
        try Self.validateBookName(name)
        let book = LocalBook(zoneName: name)
        guard try store.hasBook(book), try !store.opening(book).isPendingDelete() else {
            throw ScorebookError(.invalidInput, "no book named \"\(name)\"")
        }
        return try store.opening(book)
    }

    /// How `book list` shows each owner in text: by name when this store has looked them up.
    public func ownerLabels() -> [String: String] {
        var labels: [String: String] = [:]
        for summary in (try? books()) ?? [] where !summary.book.ownerRecordName.isEmpty {
            labels[summary.book.ownerRecordName] = personLabel(summary.book.ownerRecordName)
        }
        return labels
    }
}
