import RecordSync

/// The scorekeeping domain's entity types and its default zone, for an app that opens a
/// `SyncStore` on scorebook data.
///
/// ```swift
/// let store = try SyncStore(path: "scores.sqlite", zone: ScorebookDomain.defaultZoneName,
///                           entityTypes: ScorebookDomain.entityTypes)
/// try store.save(Game(name: "Catan"))
/// ```
public enum ScorebookDomain {
    /// The zone (book) every account has: `ScorebookData`.
    public static let defaultZoneName = "ScorebookData"

    /// Every entity type of the domain, parents before the records that reference them.
    public static let entityTypes: [any SyncedEntity.Type] = [
        Person.self, Game.self, Match.self, Player.self, Score.self, MatchImage.self, MatchLocation.self,
    ]
}
