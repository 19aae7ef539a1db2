import Foundation
import RecordClient
import RecordModel
import SyncEngine

/// The public game catalogue: a club publishes its games once to the container's public
/// database, and anyone logged in to the same server adds them to a scorebook.
extension Scorebook {
    /// A client of the logged-in account's public database.
    func catalogClient() throws -> RecordClient {
        guard let account = try accounts.account() else {
            throw ScorebookError(.sync, "not logged in; run 'scorebook account login --server URL --token TOKEN' first")
        }
        var client = RecordClient(endpoint: account.endpoint)
        client.database = "public"
        return client
    }

    /// Every game in the catalogue, by name; its publishers are looked up so that the list
    /// names them (`publisherLabels`).
    public func catalog() async throws -> [CatalogEntry] {
        let client = try catalogClient()
        let records = try await Self.catalogCall { try await client.queryAllRecords(zoneID: .default, recordType: CatalogEntry.recordType) }
        let entries = records.compactMap(CatalogEntry.init(record:)).sorted {
            $0.name.lowercased() != $1.name.lowercased() ? $0.name.lowercased() < $1.name.lowercased() : $0.recordName < $1.recordName
        }
        await learnUsers(Set(entries.compactMap(\.publisher).filter { !knowsUser($0) }))
        return entries
    }

    /// How `catalog list` names each publisher: by name when known, else the user record name.
    public func publisherLabels(_ entries: [CatalogEntry]) -> [String: String] {
        var labels: [String: String] = [:]
        for publisher in entries.compactMap(\.publisher) { labels[publisher] = shortName(publisher) }
        return labels
    }

    /// Takes the user's own entry named `name` (any case) out of the catalogue; the games
    /// already added from it stay in their books.
    @discardableResult
    public func unpublishFromCatalog(name: String) async throws -> CatalogEntry {
        let wanted = name.trimmingCharacters(in: .whitespaces).lowercased()
        guard let entry = try await catalog().first(where: { $0.name.lowercased() == wanted }) else {
            throw ScorebookError(.badReference, "no game named \"\(name)\" in the catalogue; 'scorebook catalog list' shows what is there")
        }
        let me = try accounts.account()?.userRecordName
        if let publisher = entry.publisher, publisher != me {
            throw ScorebookError(.invalidInput, "\(shortName(publisher)) published \"\(entry.name)\" to the catalogue; only they can unpublish it")
        }
        let client = try catalogClient()
        let results = try await Self.catalogCall {
            try await client.modifyRecords(zoneID: .default, operations: [.forceDelete(entry.recordName, recordType: CatalogEntry.recordType)],
                                           atomic: true)
        }
        if case .failed(let error)? = results.first {
            throw ScorebookError(.sync, "the catalogue kept \"\(entry.name)\": \(error.reason)")
        }
        return entry
    }

    /// Publishes a local game (its name and scoring) with a description; publishing it again
    /// changes the entry. Only the user who first published a name may change it.
    public func publishToCatalog(gameReference: String, description: String) async throws -> CatalogEntry {
        let game = try resolve(Game.self, gameReference)
        let entry = CatalogEntry(name: game.name, lowScoreWins: game.lowScoreWins, description: description, modificationDate: now())
        let client = try catalogClient()
        let results = try await Self.catalogCall {
            try await client.modifyRecords(zoneID: .default, operations: [RecordOperation(kind: .forceReplace, record: entry.record)], atomic: true)
        }
        switch results.first {
        case .saved(let record)?:
            return CatalogEntry(record: record) ?? entry
        case .failed(let error)?:
            throw ScorebookError(.sync, "the catalogue refused \"\(game.name)\": \(error.reason)")
        default:
            throw ScorebookError(.sync, "the catalogue did not save \"\(game.name)\"")
        }
    }

    /// Adds the catalogue's game named `name` (any case) to this scorebook.
    public func addGameFromCatalog(name: String, allowDuplicate: Bool = false) async throws -> Game {
        let wanted = name.trimmingCharacters(in: .whitespaces).lowercased()
        guard let entry = try await catalog().first(where: { $0.name.lowercased() == wanted }) else {
            throw ScorebookError(.badReference, "no game named \"\(name)\" in the catalogue; 'scorebook catalog list' shows what is there")
        }
        return try addGame(name: entry.name, lowScoreWins: entry.lowScoreWins, allowDuplicate: allowDuplicate)
    }

    /// Runs a catalogue request, turning server and network failures into one-line errors.
    static func catalogCall<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as RecordClientError {
            if error.serverErrorCode == .accessDenied {
                throw ScorebookError(.sync, "another user published this game to the catalogue; only they can change it")
            }
            throw ScorebookError(.sync, "catalogue: \(error.description)")
        }
    }
}
