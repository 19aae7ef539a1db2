import Foundation
import RecordClient
import RecordModel
import SyncEngine

/// Renaming a book and checking who a deletion would take it from: both reach the share
/// record of a book the user owns.
extension Scorebook {
    /// Gives the book `name` (its zone name or title) the title `title`: what `book list`
    /// shows and, when it is shared, the share's title that participants see. The zone name stays.
    public func renameBook(named name: String, to title: String) async throws {
        let title = title.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !title.isEmpty, title.count <= 255 else { throw ScorebookError(.invalidInput, "a book's title is 1 to 255 characters") }
        let owned = try store.books().filter { $0.book.scope == .private && !$0.pendingDelete }
        guard let summary = owned.first(where: { $0.book.zoneName == name }) ?? owned.first(where: { $0.title == name }) else {
            if try store.books().contains(where: { $0.book.scope == .shared && ($0.title == name || $0.book.zoneName == name) }) {
                throw ScorebookError(.invalidInput, "only the owner can rename the book \(name)")
            }
            throw ScorebookError(.invalidInput, "no book named \"\(name)\"")
        }
        let bookStore = try store.opening(summary.book)
        // A shared book's title is the share's: it changes there first, so a failure changes nothing.
        if try accounts.account() != nil {
            let client = try accountClient()
            let book = Scorebook(store: bookStore, accounts: accounts)
            try await talking {
                guard let share = try await book.currentShare(client, zone: summary.book.zoneID) else { return }
                _ = try await book.saveShare(client, zone: summary.book.zoneID, existing: share,
                                             participants: Self.keptParticipants(share, dropping: ""), title: title)
            }
        }
        try bookStore.setBookDetails(title: title, role: summary.role)
    }

    /// The people other than the owner who accepted the book `name` (the user's own), by
    /// name; empty when it is not shared or the store is not logged in. Throws when the
    /// server cannot be asked.
    public func acceptedParticipants(ofBook name: String) async throws -> [String] {
        let bookStore = try ownedBookStore(named: name)
        guard try accounts.account() != nil else { return [] }
        let client = try accountClient()
        let book = Scorebook(store: bookStore, accounts: accounts)
        return try await talking {
            let share: JSONValue?
            do {
                share = try await book.currentShare(client, zone: bookStore.book.zoneID)
            } catch RecordClientError.server(let error, _) where error.code == .zoneNotFound {
                share = nil  // never synced: no zone on the server yet, so no share either
            }
            guard let share else { return [] }
            return Self.participants(of: share).filter { $0.type != "OWNER" && $0.acceptanceStatus == "ACCEPTED" }.map { participant in
                participant.userRecordName.flatMap(personLabel) ?? participant.name ?? participant.emailAddress ?? participant.userRecordName ?? "?"
            }
        }
    }
}
