import Foundation
import RecordModel
// The domain and the layer under it, for every file of the CLI (and its tests) that imports Scorebook.
@_exported import RecordSync
@_exported import ScorebookKit
import SyncEngine

/// One machine's scorebook: the entities in a local store, the commands of the CLI, and sync.
///
/// ```swift
/// let book = try Scorebook(storePath: "/tmp/book.sqlite")
/// let catan = try book.addGame(name: "Catan")
/// let ann = try book.addPerson(firstName: "Ann", lastName: "Lee")
/// let bob = try book.addPerson(firstName: "Bob")
/// let match = try book.startMatch(gameReference: "Catan", playerReferences: ["Ann", "Bob"])
/// try book.addScore(matchReference: match.recordName, playerReference: "Ann", value: 10)
/// try book.finishMatch(reference: match.recordName)
/// let result = try book.result(of: match)   // totals, ranks, winner
/// ```
public final class Scorebook {
    /// The zone every Scorebook record lives in.
    public static let zoneID = ZoneID(zoneName: ScorebookDomain.defaultZoneName)

    /// Every entity type. Adding one to the scorebook means writing a `CloudKitCompatible`
    /// type and listing it here; nothing else switches on types.
    public static let entityTypes: [any CloudKitCompatible.Type] = [
        Person.self, Game.self, Match.self, Player.self, Score.self, MatchImage.self, MatchLocation.self,
    ]

    public let store: LocalRecordStore
    public let accounts: AccountManager
    let clock: () -> Date

    /// Opens (creating if needed) the store at `storePath`.
    public convenience init(storePath: String, book: LocalBook = .defaultBook) throws {
        do {
            try self.init(store: LocalRecordStore(path: storePath, book: book))
        } catch let error as ScorebookError {
            throw error
        } catch {
            throw ScorebookError(.invalidInput, "cannot open the store at \(storePath): \(error)")
        }
    }

    /// A scorebook over an open store; tests pass an `AccountManager` with a server double
    /// and a clock.
    public init(store: LocalRecordStore, accounts: AccountManager? = nil, clock: @escaping () -> Date = Date.init) {
        self.store = store
        self.accounts = accounts ?? AccountManager(store: store)
        self.clock = clock
    }

    /// The entity type a record type names, if the scorebook knows it.
    public static func entityType(named recordType: String) -> (any CloudKitCompatible.Type)? {
        entityTypes.first { $0.recordType == recordType }
    }

    // MARK: Reading entities

    /// Every entity of a type; records that cannot be read as one are skipped.
    public func all<E: CloudKitCompatible>(_ type: E.Type) throws -> [E] {
        try store.records(ofType: E.recordType).compactMap { try? E(record: $0) }
    }

    public func entity<E: CloudKitCompatible>(_ type: E.Type, named recordName: String) throws -> E? {
        try store.record(named: recordName).flatMap { try? E(record: $0) }
    }

    /// Entities of a type that reference `target`.
    func entities<E: CloudKitCompatible>(_ type: E.Type, referencing target: String) throws -> [E] {
        try store.records(referencing: target, ofType: E.recordType).compactMap { try? E(record: $0) }
    }

    /// The display name of a record of any known type.
    public static func displayName(of record: Record) -> String? {
        guard let type = entityType(named: record.recordType), let entity = try? type.init(record: record) else { return nil }
        return entity.displayName
    }

    // MARK: REF resolution

    /// The entity of `type` that `reference` names, or a `.badReference` error.
    public func resolve<E: CloudKitCompatible>(_ type: E.Type, _ reference: String) throws -> E {
        try resolve(reference, among: all(type))
    }

    func resolve<E: CloudKitCompatible>(_ reference: String, among entities: [E]) throws -> E {
        let candidates = entities.map {
            ReferenceResolver.Candidate(recordName: $0.recordName, names: $0.referenceNames, displayName: $0.displayName)
        }
        let noun = E.recordType.lowercased()
        switch ReferenceResolver.resolve(reference, among: candidates) {
        case .found(let name):
            return entities.first { $0.recordName == name }!
        case .notFound where E.self == Match.self:
            // A match has no name of its own: say how one is named, and where a game's matches are.
            let game = (try? all(Game.self))?.first { $0.name.lowercased() == reference.lowercased() }
            throw ScorebookError(.badReference, "no match matches \"\(reference)\"; a match is named by its record name "
                + "or at least \(ReferenceResolver.shortestPrefix) characters of its id"
                + (game.map { "; \($0.name) is a game: 'scorebook match list --game \(ShellCommand.quoted($0.name))' lists its matches" }
                    ?? " (see 'scorebook match list')"))
        case .notFound:
            throw ScorebookError(.badReference, "no \(noun) matches \"\(reference)\" (a REF is a name, a record name, "
                + "or at least \(ReferenceResolver.shortestPrefix) characters of its id)")
        case .ambiguous(let matches):
            let listed = matches.prefix(8).map(\.listed).joined(separator: ", ")
            throw ScorebookError(.badReference, "\"\(reference)\" matches \(matches.count) \(noun) records: \(listed); "
                + "name one by its short id")
        }
    }

    // MARK: Saving

    /// Saves entities made or changed here, in one transaction with their outbox entries.
    func save(_ entities: [any CloudKitCompatible]) throws {
        try store.edit { editor in
            for entity in entities { try editor.save(Self.localRecord(of: entity)) }
        }
    }

    /// The record to store for an entity: its fields, and the removal of known fields it left
    /// empty (fields it does not know are kept).
    static func localRecord(of entity: any CloudKitCompatible) -> Record {
        entity.localRecord
    }

    /// The time stamped on an edit.
    func now() -> Date {
        // Milliseconds, as records carry them, so a stored date reads back equal.
        Date(timeIntervalSince1970: (clock().timeIntervalSince1970 * 1000).rounded() / 1000)
    }
}
