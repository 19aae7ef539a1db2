import Foundation

/// What an exported field holds.
enum ExportFieldKind: Equatable {
    /// A name: not blank.
    case name
    /// Free text.
    case text
    case integer
    case number
    case flag
    case date
    /// A record name of the given type.
    case reference(String)
    /// JSON `"location": {"latitude", "longitude"}`; CSV columns `latitude` and `longitude`.
    case location
}

struct ExportField {
    var name: String
    var kind: ExportFieldKind
    var required: Bool

    init(_ name: String, _ kind: ExportFieldKind, required: Bool = false) {
        self.name = name
        self.kind = kind
        self.required = required
    }
}

/// One exported entity type: its fields, and how an entity becomes a row and back.
struct ExportKind: Sendable {
    var recordType: String
    /// The JSON key of its array.
    var section: String
    var fields: [ExportField]
    /// The row values of an entity of this type (none for an entity of another type).
    var values: @Sendable (any CloudKitCompatible) -> [String: ExportValue]
    /// The entity of a checked row (every required field present, each of its kind).
    var make: @Sendable (ExportRow) -> any CloudKitCompatible

    init<E: CloudKitCompatible>(_ type: E.Type, section: String, fields: [ExportField],
                                values: @escaping @Sendable (E) -> [String: ExportValue?], make: @escaping @Sendable (ExportRow) -> E)
    {
        recordType = E.recordType
        self.section = section
        self.fields = fields
        self.values = { entity in (entity as? E).map { values($0).compactMapValues { $0 } } ?? [:] }
        self.make = make
    }

    static func kind(ofType recordType: String) -> ExportKind? { all.first { $0.recordType == recordType } }

    /// Parents before children: a row's references point at earlier kinds.
    static let all: [ExportKind] = [
        ExportKind(
            Person.self, section: "people",
            fields: [.init("firstName", .name, required: true), .init("lastName", .text), .init("emailAddress", .text)],
            values: { ["firstName": .text($0.firstName), "lastName": $0.lastName.map(ExportValue.text),
                       "emailAddress": $0.emailAddress.map(ExportValue.text)] },
            make: { row in
                Person(recordName: row.recordName, firstName: row.text("firstName") ?? "", lastName: row.text("lastName"),
                       emailAddress: row.text("emailAddress"), modificationDate: row.modificationDate)
            }),
        ExportKind(
            Game.self, section: "games",
            fields: [.init("name", .name, required: true), .init("lowScoreWins", .flag, required: true)],
            values: { ["name": .text($0.name), "lowScoreWins": .flag($0.lowScoreWins)] },
            make: { row in
                Game(recordName: row.recordName, name: row.text("name") ?? "", lowScoreWins: row.flag("lowScoreWins") ?? false,
                     modificationDate: row.modificationDate)
            }),
        ExportKind(
            Match.self, section: "matches",
            fields: [.init("game", .reference(Game.recordType), required: true), .init("startDate", .date, required: true),
                     .init("endDate", .date), .init("notes", .text)],
            values: { ["game": .reference($0.game), "startDate": .date($0.startDate), "endDate": $0.endDate.map(ExportValue.date),
                       "notes": $0.notes.map(ExportValue.text)] },
            make: { row in
                Match(recordName: row.recordName, game: row.reference("game") ?? "", startDate: row.date("startDate") ?? row.modificationDate,
                      endDate: row.date("endDate"), notes: row.text("notes"), modificationDate: row.modificationDate)
            }),
        ExportKind(
            Player.self, section: "players",
            fields: [.init("match", .reference(Match.recordType), required: true),
                     .init("person", .reference(Person.recordType), required: true), .init("seat", .integer, required: true)],
            values: { ["match": .reference($0.match), "person": .reference($0.person), "seat": .integer($0.seat)] },
            make: { row in
                Player(recordName: row.recordName, match: row.reference("match") ?? "", person: row.reference("person") ?? "",
                       seat: row.integer("seat") ?? 0, modificationDate: row.modificationDate)
            }),
        ExportKind(
            Score.self, section: "scores",
            fields: [.init("player", .reference(Player.recordType), required: true), .init("value", .number, required: true),
                     .init("round", .integer)],
            values: { ["player": .reference($0.player), "value": .number($0.value), "round": $0.round.map(ExportValue.integer)] },
            make: { row in
                Score(recordName: row.recordName, player: row.reference("player") ?? "", value: row.number("value") ?? 0,
                      round: row.integer("round"), modificationDate: row.modificationDate)
            }),
        ExportKind(
            MatchLocation.self, section: "matchLocations",
            fields: [.init("match", .reference(Match.recordType), required: true), .init("name", .text), .init("location", .location)],
            values: { place in
                var location: ExportValue?
                if let latitude = place.latitude, let longitude = place.longitude {
                    location = .location(latitude: latitude, longitude: longitude)
                }
                return ["match": .reference(place.match), "name": place.name.map(ExportValue.text), "location": location]
            },
            make: { row in
                var coordinates: (latitude: Double, longitude: Double)?
                if case .location(let latitude, let longitude)? = row.values["location"] { coordinates = (latitude, longitude) }
                return MatchLocation(recordName: row.recordName, match: row.reference("match") ?? "", name: row.text("name"),
                                     latitude: coordinates?.latitude, longitude: coordinates?.longitude,
                                     modificationDate: row.modificationDate)
            }),
    ]
}
